#include "config/units.hpp"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, ReadsEveryUnitExactly) {
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("10s"), 10s);
  EXPECT_EQ(parse_duration("1m"), 1min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1d"), 24h);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("0.001ms"), 1us);
  EXPECT_EQ(parse_duration("0"), 0s);
}

TEST(ParseDuration, RefusesWhatIsNotADuration) {
  for (const char* text : {"", "10", "s", "10 s", "-1s", "1x", "1.s5", "0.0000001ms", "1e3s",
                           "99999999999999999999d"}) {
    EXPECT_FALSE(parse_duration(text).has_value()) << text;
  }
}

TEST(ParseRate, ReadsUnitsAndDurations) {
  const auto ten = parse_rate("10/s");
  ASSERT_TRUE(ten.has_value());
  EXPECT_EQ(ten->permits, 10);
  EXPECT_EQ(ten->period, 1s);
  EXPECT_EQ(parse_rate("100/m")->period, 1min);
  EXPECT_EQ(parse_rate("5/200ms")->period, 200ms);
  EXPECT_EQ(parse_rate("0.5/s")->permits, 0.5);
  EXPECT_EQ(parse_rate("1000/d")->period, 24h);
}

TEST(ParseRate, RefusesWhatIsNotARate) {
  for (const char* text : {"", "10", "10/", "/s", "0/s", "10/0s", "10/x", "ten/s", "10 /s"}) {
    EXPECT_FALSE(parse_rate(text).has_value()) << text;
  }
}

TEST(FormatRate, ReadsBackAsWritten) {
  EXPECT_EQ(format_rate(*parse_rate("10/s")), "10/s");
  EXPECT_EQ(format_rate(*parse_rate("5/200ms")), "5/200ms");
  EXPECT_EQ(format_rate(*parse_rate("30/m")), "30/m");
}

}  // namespace
}  // namespace sluice::config
