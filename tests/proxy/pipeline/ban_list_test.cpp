// The ban list on its own: `after` strikes within `within` ban a client address for `for`,
// counted per address on the limiter engine, with a manual clock.
#include "proxy/pipeline/ban_list.hpp"

#include <gtest/gtest.h>

#include "tests/support/ip_literal.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::pipeline {
namespace {

using namespace std::chrono_literals;
using test::at;

using test::ip;

constexpr std::uint64_t kMaxKeys = 1000;

TEST(BanList, TheAfterthStrikeWithinTheWindowBansForTheDuration) {
  BanList bans({.after = 3, .within = 1min, .duration = 10min}, kMaxKeys);
  const IpAddress client = ip("192.0.2.1");
  EXPECT_FALSE(bans.banned_for(client, at(0s)).has_value());
  EXPECT_FALSE(bans.strike(client, at(0s)));
  EXPECT_FALSE(bans.strike(client, at(10s)));
  EXPECT_FALSE(bans.banned_for(client, at(15s)).has_value());
  EXPECT_TRUE(bans.strike(client, at(20s)));
  EXPECT_EQ(bans.banned_for(client, at(20s)), 10min);
  EXPECT_EQ(bans.banned_for(client, at(25s)), 10min - 5s);
  EXPECT_EQ(bans.banned_for(client, at(20s + 10min) - 1ns), 1ns);
  EXPECT_FALSE(bans.banned_for(client, at(20s + 10min)).has_value());
}

TEST(BanList, StrikesOlderThanTheWindowDoNotCount) {
  BanList bans({.after = 3, .within = 1min, .duration = 10min}, kMaxKeys);
  const IpAddress client = ip("192.0.2.1");
  EXPECT_FALSE(bans.strike(client, at(0s)));
  EXPECT_FALSE(bans.strike(client, at(40s)));
  EXPECT_FALSE(bans.strike(client, at(80s)));  // the one at 0 s has left the window
  EXPECT_FALSE(bans.banned_for(client, at(80s)).has_value());
  EXPECT_TRUE(bans.strike(client, at(90s)));  // 40 s, 80 s and 90 s
  EXPECT_EQ(bans.banned_for(client, at(90s)), 10min);
}

TEST(BanList, AStrikeWhileBannedDoesNotLengthenTheBan) {
  BanList bans({.after = 1, .within = 1h, .duration = 1min}, kMaxKeys);
  const IpAddress client = ip("2001:db8::7");
  EXPECT_TRUE(bans.strike(client, at(0s)));
  EXPECT_TRUE(bans.strike(client, at(30s)));  // still over the limit of strikes
  EXPECT_EQ(bans.banned_for(client, at(30s)), 30s);
  EXPECT_FALSE(bans.banned_for(client, at(1min)).has_value());
}

TEST(BanList, AClientStillOverTheStrikesIsBannedAgainAtItsNextStrike) {
  BanList bans({.after = 2, .within = 1h, .duration = 1min}, kMaxKeys);
  const IpAddress client = ip("192.0.2.1");
  EXPECT_FALSE(bans.strike(client, at(0s)));
  EXPECT_TRUE(bans.strike(client, at(1s)));
  EXPECT_FALSE(bans.banned_for(client, at(61s)).has_value());
  // Its strikes are still within the hour: limited once more, it is banned once more.
  EXPECT_TRUE(bans.strike(client, at(2min)));
  EXPECT_EQ(bans.banned_for(client, at(2min)), 1min);
}

TEST(BanList, BansEachAddressApart) {
  BanList bans({.after = 1, .within = 1min, .duration = 10min}, kMaxKeys);
  EXPECT_TRUE(bans.strike(ip("192.0.2.1"), at(0s)));
  EXPECT_FALSE(bans.banned_for(ip("192.0.2.2"), at(1s)).has_value());
  EXPECT_FALSE(bans.banned_for(ip("2001:db8::1"), at(1s)).has_value());
  // The IPv4-mapped form of a banned address is that address.
  EXPECT_EQ(bans.banned_for(ip("::ffff:192.0.2.1"), at(1s)), 10min - 1s);
  EXPECT_EQ(BanList::hash(ip("::ffff:192.0.2.1")), BanList::hash(ip("192.0.2.1")));
  EXPECT_NE(BanList::hash(ip("192.0.2.1")), BanList::hash(ip("192.0.2.2")));
}

TEST(BanList, LiftEndsABanAndForgetsTheStrikes) {
  BanList bans({.after = 2, .within = 1min, .duration = 10min}, kMaxKeys);
  const IpAddress client = ip("192.0.2.1");
  EXPECT_FALSE(bans.lift(client, at(0s)));  // not banned
  bans.strike(client, at(0s));
  EXPECT_TRUE(bans.strike(client, at(1s)));

  EXPECT_TRUE(bans.lift(client, at(2s)));

  EXPECT_FALSE(bans.banned_for(client, at(2s)).has_value());
  EXPECT_FALSE(bans.strike(client, at(3s)));  // the strikes before went too
  EXPECT_TRUE(bans.strike(client, at(4s)));
}

}  // namespace
}  // namespace sluice::pipeline
