// How runtime overrides and bans are written in a shared store's tables, and read back; the
// replicas that share them are tested in runtime_control_test.cpp.
#include "proxy/admin/shared_control.hpp"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

using namespace std::chrono_literals;

TEST(SharedControl, AnOverrideReadsBackAsItWasWritten) {
  const pipeline::OverrideEntry entry{
      .limiter = "per-user",
      .key = "1.2.3.4+gold",
      .parameters = R"({"limit":1000,"window":"1h"})",
      .expires_at = limiter::TimePoint(std::chrono::milliseconds(1'700'000'000'123))};
  EXPECT_EQ(override_field(entry), "per-user\n1.2.3.4+gold");
  EXPECT_EQ(override_value(entry),
            R"({"parameters":{"limit":1000,"window":"1h"},"expires_at":1700000000123})");
  EXPECT_EQ(override_from(override_field(entry), override_value(entry)), entry);
}

TEST(SharedControl, ABanReadsBackAsItWasWritten) {
  const pipeline::BanEntry entry{
      .ip = *pipeline::IpAddress::parse("2001:db8::1"),
      .expires_at = limiter::TimePoint(std::chrono::milliseconds(1'700'000'000'000))};
  EXPECT_EQ(ban_value(entry), R"({"expires_at":1700000000000})");
  EXPECT_EQ(ban_from("2001:db8::1", ban_value(entry)), entry);
}

TEST(SharedControl, EntriesThatAreNotOursAreSkipped) {
  EXPECT_FALSE(override_from("no-newline", R"({"parameters":{},"expires_at":1})"));
  EXPECT_FALSE(override_from("a\nb", R"({"parameters":5,"expires_at":1})"));
  EXPECT_FALSE(override_from("a\nb", R"({"parameters":{}})"));
  EXPECT_FALSE(override_from("a\nb", "not json"));
  EXPECT_FALSE(ban_from("not-an-ip", R"({"expires_at":1})"));
  EXPECT_FALSE(ban_from("192.0.2.1", R"({"expires_at":"soon"})"));
}

}  // namespace
}  // namespace sluice::admin
