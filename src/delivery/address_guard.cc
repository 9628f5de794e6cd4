#include "delivery/address_guard.h"

#include <algorithm>
#include <array>
#include <optional>

namespace madeira::delivery {
namespace {

namespace ip = boost::asio::ip;

const std::array<ip::network_v4, 10>& NonPublicV4() {
  static const std::array<ip::network_v4, 10> kNets = {
      ip::make_network_v4("0.0.0.0/8"),      ip::make_network_v4("10.0.0.0/8"),
      ip::make_network_v4("100.64.0.0/10"),  ip::make_network_v4("127.0.0.0/8"),
      ip::make_network_v4("169.254.0.0/16"), ip::make_network_v4("172.16.0.0/12"),
      ip::make_network_v4("192.168.0.0/16"), ip::make_network_v4("224.0.0.0/4"),
      ip::make_network_v4("240.0.0.0/4"),   // reserved, and 255.255.255.255 broadcast
      ip::make_network_v4("192.0.0.0/24"),  // IETF protocol assignments
  };
  return kNets;
}

const std::array<ip::network_v6, 6>& NonPublicV6() {
  static const std::array<ip::network_v6, 6> kNets = {
      ip::make_network_v6("::/128"),    ip::make_network_v6("::1/128"),
      ip::make_network_v6("fc00::/7"),  ip::make_network_v6("fe80::/10"),
      ip::make_network_v6("fec0::/10"), ip::make_network_v6("ff00::/8"),
  };
  return kNets;
}

// The IPv4 address an IPv6 address stands for, if it is a form that carries one.
std::optional<ip::address_v4> EmbeddedV4(const ip::address_v6& v6) {
  static const ip::network_v6 kCompatible = ip::make_network_v6("::/96");
  static const ip::network_v6 kNat64 = ip::make_network_v6("64:ff9b::/96");
  if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6);
  if (v6.is_loopback() || v6.is_unspecified()) return std::nullopt;
  if (Contains(kCompatible, v6) || Contains(kNat64, v6)) {
    ip::address_v6::bytes_type b = v6.to_bytes();
    return ip::address_v4(ip::address_v4::bytes_type{b[12], b[13], b[14], b[15]});
  }
  return std::nullopt;
}

bool IsPublicV4(const ip::address_v4& v4) {
  return std::none_of(NonPublicV4().begin(), NonPublicV4().end(),
                      [&](const ip::network_v4& n) { return Contains(n, v4); });
}

bool IsUnicast(const ip::address& a) {
  if (a.is_unspecified() || a.is_multicast()) return false;
  return !(a.is_v4() && a.to_v4() == ip::address_v4::broadcast());
}

}  // namespace

core::Result<Network> ParseCidr(std::string_view text) {
  std::string s(text);
  if (s.find('/') == std::string::npos) s += s.find(':') == std::string::npos ? "/32" : "/128";
  boost::system::error_code ec;
  if (s.find(':') == std::string::npos) {
    ip::network_v4 net = ip::make_network_v4(s, ec);
    if (!ec) return Network(net.canonical());
  } else {
    ip::network_v6 net = ip::make_network_v6(s, ec);
    if (!ec) return Network(net.canonical());
  }
  return core::MakeError(core::ErrorCode::kInvalidField, "not a CIDR block: " + std::string(text),
                         "allow_cidrs");
}

bool Contains(const Network& network, const ip::address& address) {
  if (const auto* n4 = std::get_if<ip::network_v4>(&network)) {
    return address.is_v4() &&
           ip::network_v4(address.to_v4(), n4->prefix_length()).canonical() == *n4;
  }
  const auto& n6 = std::get<ip::network_v6>(network);
  return address.is_v6() &&
         ip::network_v6(address.to_v6(), n6.prefix_length()).canonical() == n6.canonical();
}

bool IsPublicAddress(const ip::address& address) {
  if (address.is_v4()) return IsPublicV4(address.to_v4());
  const ip::address_v6 v6 = address.to_v6();
  if (std::optional<ip::address_v4> v4 = EmbeddedV4(v6)) return IsPublicV4(*v4);
  return std::none_of(NonPublicV6().begin(), NonPublicV6().end(),
                      [&](const ip::network_v6& n) { return Contains(n, v6); });
}

core::Result<AddressGuard> AddressGuard::Create(const AddressGuardOptions& options) {
  AddressGuard guard;
  guard.allow_private_ = options.allow_private_targets;
  for (const std::string& cidr : options.allow_cidrs) {
    core::Result<Network> net = ParseCidr(cidr);
    if (!net) return net.error();
    guard.allowed_.push_back(*net);
  }
  return guard;
}

bool AddressGuard::Allows(const ip::address& address) const {
  std::optional<ip::address> embedded;
  if (address.is_v6()) {
    if (std::optional<ip::address_v4> v4 = EmbeddedV4(address.to_v6())) embedded = *v4;
  }
  for (const Network& net : allowed_) {
    if (Contains(net, address) || (embedded && Contains(net, *embedded))) return true;
  }
  if (allow_private_) return IsUnicast(embedded.value_or(address));
  return IsPublicAddress(address);
}

}  // namespace madeira::delivery
