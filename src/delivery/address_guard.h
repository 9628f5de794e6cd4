// The SSRF guard: which IP addresses a webhook may be delivered to. Applied to the address the
// connection is actually made to, so DNS answers and rebinding cannot route around it.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.h"

namespace madeira::delivery {

using Network = std::variant<boost::asio::ip::network_v4, boost::asio::ip::network_v6>;

// "10.1.0.0/16", "::1/128"; a bare address is a /32 or /128. kInvalidField otherwise.
core::Result<Network> ParseCidr(std::string_view text);

bool Contains(const Network& network, const boost::asio::ip::address& address);

// True for addresses on the public internet: not loopback, private (10/8, 172.16/12,
// 192.168/16, 100.64/10, fc00::/7), link-local (169.254/16, fe80::/10), multicast,
// unspecified, broadcast or reserved (0/8, 240/4, fec0::/10). IPv6 forms that carry an IPv4
// address (::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::a.b.c.d) are judged by that IPv4 address.
bool IsPublicAddress(const boost::asio::ip::address& address);

struct AddressGuardOptions {
  bool allow_private_targets = false;  // every unicast address, for tests and closed networks
  std::vector<std::string> allow_cidrs = {};  // exceptions, e.g. {"10.1.0.0/16"}
};

class AddressGuard {
 public:
  // kInvalidField when an allow-list entry is not a CIDR.
  static core::Result<AddressGuard> Create(const AddressGuardOptions& options);
  // Refuses everything non-public; used when no options are given.
  AddressGuard() = default;

  bool Allows(const boost::asio::ip::address& address) const;

 private:
  bool allow_private_ = false;
  std::vector<Network> allowed_;
};

}  // namespace madeira::delivery
