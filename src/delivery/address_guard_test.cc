#include "delivery/address_guard.h"

#include <gtest/gtest.h>

namespace madeira::delivery {
namespace {

namespace ip = boost::asio::ip;

bool Public(const char* a) { return IsPublicAddress(ip::make_address(a)); }

TEST(AddressGuardTest, RefusesEveryNonPublicRange) {
  for (const char* a : {"127.0.0.1",
                        "127.255.255.254",
                        "10.0.0.1",
                        "10.255.255.255",
                        "172.16.0.1",
                        "172.31.255.255",
                        "192.168.1.1",
                        "100.64.0.1",
                        "100.127.255.255",
                        "169.254.169.254",
                        "224.0.0.1",
                        "239.255.255.255",
                        "0.0.0.0",
                        "0.1.2.3",
                        "255.255.255.255",
                        "240.0.0.1",
                        "192.0.0.8",
                        "::1",
                        "::",
                        "fc00::1",
                        "fdff:ffff::1",
                        "fe80::1",
                        "febf::1",
                        "ff02::1",
                        "fec0::1"}) {
    EXPECT_FALSE(Public(a)) << a;
  }
}

TEST(AddressGuardTest, AllowsPublicAddresses) {
  for (const char* a : {"8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255",
                        "100.128.0.1", "192.169.0.1", "2606:4700:4700::1111", "2001:db8::1",
                        "::ffff:8.8.8.8", "64:ff9b::808:808"}) {
    EXPECT_TRUE(Public(a)) << a;
  }
}

TEST(AddressGuardTest, JudgesIpv4InIpv6FormsByTheIpv4Address) {
  for (const char* a : {"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
                        "::ffff:0.0.0.0", "::127.0.0.1", "::10.1.2.3", "64:ff9b::127.0.0.1",
                        "64:ff9b::192.168.0.1", "::ffff:224.0.0.1"}) {
    EXPECT_FALSE(Public(a)) << a;
  }
}

TEST(AddressGuardTest, DefaultGuardRefusesPrivateTargets) {
  AddressGuard guard;
  EXPECT_FALSE(guard.Allows(ip::make_address("127.0.0.1")));
  EXPECT_FALSE(guard.Allows(ip::make_address("::ffff:192.168.0.1")));
  EXPECT_TRUE(guard.Allows(ip::make_address("93.184.216.34")));
}

TEST(AddressGuardTest, AllowPrivateTargetsLetsUnicastThrough) {
  core::Result<AddressGuard> guard = AddressGuard::Create({.allow_private_targets = true});
  ASSERT_TRUE(guard.has_value());
  for (const char* a : {"127.0.0.1", "::1", "10.0.0.1", "fe80::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(guard->Allows(ip::make_address(a))) << a;
  }
  for (const char* a : {"0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255"}) {
    EXPECT_FALSE(guard->Allows(ip::make_address(a))) << a;
  }
}

TEST(AddressGuardTest, AllowListCoversOnlyItsBlocks) {
  core::Result<AddressGuard> guard =
      AddressGuard::Create({.allow_cidrs = {"10.1.0.0/16", "::1/128", "192.168.7.7"}});
  ASSERT_TRUE(guard.has_value());
  for (const char* a : {"10.1.0.1", "10.1.255.255", "::1", "192.168.7.7", "::ffff:10.1.2.3"}) {
    EXPECT_TRUE(guard->Allows(ip::make_address(a))) << a;
  }
  for (const char* a : {"10.2.0.1", "127.0.0.1", "192.168.7.8", "::ffff:10.2.0.1"}) {
    EXPECT_FALSE(guard->Allows(ip::make_address(a))) << a;
  }
}

TEST(AddressGuardTest, ParseCidr) {
  EXPECT_TRUE(ParseCidr("10.1.0.0/16").has_value());
  EXPECT_TRUE(ParseCidr("::1/128").has_value());
  EXPECT_TRUE(ParseCidr("fd00::/8").has_value());
  core::Result<Network> host_bits = ParseCidr("10.1.2.3/16");  // canonicalised to 10.1.0.0/16
  ASSERT_TRUE(host_bits.has_value());
  EXPECT_TRUE(Contains(*host_bits, ip::make_address("10.1.200.1")));
  for (const char* bad : {"", "10.1.0.0/33", "10.1.0/16", "example.com", "::1/129", "10.0.0.0/"}) {
    core::Result<Network> r = ParseCidr(bad);
    EXPECT_FALSE(r.has_value()) << bad;
  }
  core::Result<AddressGuard> guard = AddressGuard::Create({.allow_cidrs = {"nope"}});
  ASSERT_FALSE(guard.has_value());
  EXPECT_EQ(guard.error().code, core::ErrorCode::kInvalidField);
}

}  // namespace
}  // namespace madeira::delivery
