#include <gtest/gtest.h>

#include <vector>

#include "proxy/pipeline/cidr_trie.hpp"
#include "proxy/pipeline/ip_address.hpp"
#include "tests/support/ip_literal.hpp"

namespace sluice::pipeline {
namespace {

using test::ip;
config::Cidr net(std::string_view text) { return *config::parse_cidr(text); }

const std::vector<config::Cidr> kTrusted{net("10.0.0.0/8"), net("2001:db8:ffff::/48")};

TEST(ClientAddress, IsThePeerWhenThePeerIsNotTrusted) {
  // A spoofed X-Forwarded-For from an untrusted peer is ignored.
  EXPECT_EQ(client_address(ip("198.51.100.7"), kTrusted, "", "1.2.3.4"), ip("198.51.100.7"));
  EXPECT_EQ(client_address(ip("198.51.100.7"), kTrusted, "for=1.2.3.4", ""), ip("198.51.100.7"));
}

TEST(ClientAddress, ReadsForwardingHeadersRightToLeftThroughTrustedProxies) {
  // client 203.0.113.9 → (untrusted hop it claims) → proxy 10.1.1.1 → proxy 10.2.2.2 → us
  EXPECT_EQ(client_address(ip("10.2.2.2"), kTrusted, "", "1.2.3.4, 203.0.113.9, 10.1.1.1"),
            ip("203.0.113.9"));
  // The leftmost entry is only believed when everything to its right is trusted.
  EXPECT_EQ(client_address(ip("10.2.2.2"), kTrusted, "", "203.0.113.9"), ip("203.0.113.9"));
  // All trusted: the leftmost address.
  EXPECT_EQ(client_address(ip("10.2.2.2"), kTrusted, "", "10.3.3.3,10.4.4.4"), ip("10.3.3.3"));
  // No header: the trusted peer itself.
  EXPECT_EQ(client_address(ip("10.2.2.2"), kTrusted, "", ""), ip("10.2.2.2"));
}

TEST(ClientAddress, PrefersForwardedAndReadsPortsAndBrackets) {
  EXPECT_EQ(client_address(ip("10.0.0.1"), kTrusted,
                           "for=203.0.113.9:4711;proto=https, for=10.9.9.9", "1.1.1.1"),
            ip("203.0.113.9"));
  EXPECT_EQ(client_address(ip("10.0.0.1"), kTrusted, "for=\"[2001:db8::7]:443\"", ""),
            ip("2001:db8::7"));
  EXPECT_EQ(client_address(ip("10.0.0.1"), kTrusted, "", "[2001:db8::8]:80"), ip("2001:db8::8"));
}

TEST(ClientAddress, StopsAtAnEntryItCannotRead) {
  EXPECT_EQ(client_address(ip("10.0.0.1"), kTrusted, "", "203.0.113.9, unknown, 10.1.1.1"),
            ip("10.1.1.1"));
  EXPECT_EQ(client_address(ip("10.0.0.1"), kTrusted, "for=_hidden", ""), ip("10.0.0.1"));
}

TEST(IpAddress, ParsesMasksAndUnmapsIpv4MappedAddresses) {
  EXPECT_TRUE(ip("::ffff:192.0.2.1").ipv4);
  EXPECT_EQ(ip("::ffff:192.0.2.1"), ip("192.0.2.1"));
  EXPECT_EQ(ip("2001:db8:1:2:3:4:5:6").masked(64), ip("2001:db8:1:2::"));
  EXPECT_EQ(ip("192.0.2.77").masked(24).to_string(), "192.0.2.0");
  EXPECT_EQ(ip("0.10.255.1").to_string(), "0.10.255.1");
  EXPECT_EQ(ip("2001:db8::1").to_string(), "2001:db8::1");
  EXPECT_FALSE(IpAddress::parse("").has_value());
  EXPECT_FALSE(IpAddress::parse("300.1.1.1").has_value());
  EXPECT_FALSE(IpAddress::parse(std::string(100, '1')).has_value());
}

TEST(CidrTrie, FindsAddressesInAnyOfItsNetworks) {
  CidrTrie trie;
  EXPECT_FALSE(trie.contains(ip("1.2.3.4")));
  trie.insert(net("203.0.113.0/24"));
  trie.insert(net("198.51.100.7"));
  trie.insert(net("2001:db8::/32"));
  EXPECT_TRUE(trie.contains(ip("203.0.113.0")));
  EXPECT_TRUE(trie.contains(ip("203.0.113.255")));
  EXPECT_FALSE(trie.contains(ip("203.0.114.0")));
  EXPECT_TRUE(trie.contains(ip("198.51.100.7")));
  EXPECT_FALSE(trie.contains(ip("198.51.100.8")));
  EXPECT_TRUE(trie.contains(ip("2001:db8:1::1")));
  EXPECT_FALSE(trie.contains(ip("2001:db9::1")));
  EXPECT_FALSE(trie.contains(ip("::ffff:203.0.114.1")));
  CidrTrie everything;
  everything.insert(net("0.0.0.0/0"));
  EXPECT_TRUE(everything.contains(ip("8.8.8.8")));
  EXPECT_FALSE(everything.contains(ip("::1")));
}

}  // namespace
}  // namespace sluice::pipeline
