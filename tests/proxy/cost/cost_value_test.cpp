#include "proxy/cost/cost_value.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <ostream>

namespace sluice::cost {

// How a failed expectation shows a value.
void PrintTo(const CostValue& value, std::ostream* out) {
  switch (value.state) {
    case CostValue::State::number:
      *out << value.number;
      return;
    case CostValue::State::invalid:
      *out << "invalid: " << value.why;
      return;
    case CostValue::State::absent:
      *out << "absent";
      return;
  }
}

namespace {

TEST(ReadCostText, TakesDigitsWithBlanksAround) {
  EXPECT_EQ(read_cost_text("42"), CostValue::of(42));
  EXPECT_EQ(read_cost_text(" \t42\t "), CostValue::of(42));
  EXPECT_EQ(read_cost_text("0"), CostValue::of(0));
  EXPECT_EQ(read_cost_text("007"), CostValue::of(7));
  EXPECT_EQ(read_cost_text("4294967295"), CostValue::of(kMaxCost));
  EXPECT_EQ(read_cost_text("000000000000000000000000004294967295"), CostValue::of(kMaxCost));
}

TEST(ReadCostText, SaysWhyOtherTextIsNoCost) {
  EXPECT_EQ(read_cost_text("-5"), CostValue::refused(kNegative));
  EXPECT_EQ(read_cost_text("-0"), CostValue::refused(kNegative));
  EXPECT_EQ(read_cost_text("-1.5"), CostValue::refused(kNegative));
  EXPECT_EQ(read_cost_text("1.5"), CostValue::refused(kFractional));
  EXPECT_EQ(read_cost_text(" 1.0 "), CostValue::refused(kFractional));
  EXPECT_EQ(read_cost_text("4294967296"), CostValue::refused(kTooLarge));
  EXPECT_EQ(read_cost_text("99999999999"), CostValue::refused(kTooLarge));
  EXPECT_EQ(read_cost_text("99999999999999999999999999999999"), CostValue::refused(kTooLarge));
  for (const std::string_view text :
       {"", "  ", "abc", "+5", "5a", "1 2", "1.", ".5", "1.2.3", "-", "1e3", "0x10", "5,6"}) {
    EXPECT_EQ(read_cost_text(text), CostValue::refused(kNotANumber)) << '"' << text << '"';
  }
}

TEST(CostOfJsonNumbers, TakesWholeNumbersInRange) {
  EXPECT_EQ(cost_of_integer(0), CostValue::of(0));
  EXPECT_EQ(cost_of_integer(29), CostValue::of(29));
  EXPECT_EQ(cost_of_integer(-1), CostValue::refused(kNegative));
  EXPECT_EQ(cost_of_integer(std::numeric_limits<std::int64_t>::min()),
            CostValue::refused(kNegative));
  EXPECT_EQ(cost_of_integer(4294967295), CostValue::of(kMaxCost));
  EXPECT_EQ(cost_of_integer(4294967296), CostValue::refused(kTooLarge));
  EXPECT_EQ(cost_of_unsigned(std::numeric_limits<std::uint64_t>::max()),
            CostValue::refused(kTooLarge));
}

TEST(CostOfJsonNumbers, TakesADoubleOnlyWhenItIsWhole) {
  EXPECT_EQ(cost_of_double(12.0), CostValue::of(12));
  EXPECT_EQ(cost_of_double(1e3), CostValue::of(1000));
  EXPECT_EQ(cost_of_double(-0.0), CostValue::of(0));
  EXPECT_EQ(cost_of_double(4294967295.0), CostValue::of(kMaxCost));
  EXPECT_EQ(cost_of_double(12.5), CostValue::refused(kFractional));
  EXPECT_EQ(cost_of_double(0.1), CostValue::refused(kFractional));
  EXPECT_EQ(cost_of_double(-2.0), CostValue::refused(kNegative));
  EXPECT_EQ(cost_of_double(-0.5), CostValue::refused(kNegative));
  EXPECT_EQ(cost_of_double(4294967296.0), CostValue::refused(kTooLarge));
  EXPECT_EQ(cost_of_double(1e300), CostValue::refused(kTooLarge));
  EXPECT_EQ(cost_of_double(std::numeric_limits<double>::infinity()), CostValue::refused(kTooLarge));
}

TEST(AddCosts, AddsTwoNumbersAndSaysWhyNot) {
  EXPECT_EQ(add_costs(CostValue::of(19), CostValue::of(10)), CostValue::of(29));
  EXPECT_EQ(add_costs(CostValue::of(kMaxCost), CostValue::of(0)), CostValue::of(kMaxCost));
  EXPECT_EQ(add_costs(CostValue::of(kMaxCost), CostValue::of(1)), CostValue::refused(kTooLarge));
  EXPECT_EQ(add_costs(CostValue::of(1), CostValue{}), CostValue{});
  EXPECT_EQ(add_costs(CostValue{}, CostValue::of(1)), CostValue{});
  // Invalid wins over absent, and the first reason is kept.
  EXPECT_EQ(add_costs(CostValue{}, CostValue::refused(kNegative)), CostValue::refused(kNegative));
  EXPECT_EQ(add_costs(CostValue::refused(kFractional), CostValue::refused(kNegative)),
            CostValue::refused(kFractional));
}

}  // namespace
}  // namespace sluice::cost
