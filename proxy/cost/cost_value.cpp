#include "proxy/cost/cost_value.hpp"

#include <cmath>

namespace sluice::cost {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim_blanks(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/// How many digits `text` starts with.
std::size_t leading_digits(std::string_view text) {
  std::size_t count = 0;
  while (count < text.size() && is_digit(text[count])) {
    ++count;
  }
  return count;
}

}  // namespace

CostValue read_cost_text(std::string_view text) {
  text = trim_blanks(text);
  const bool negative = !text.empty() && text.front() == '-';
  const std::string_view unsigned_part = negative ? text.substr(1) : text;
  const std::size_t whole_digits = leading_digits(unsigned_part);
  if (whole_digits == 0) {
    return CostValue::refused(kNotANumber);
  }
  const std::string_view after_digits = unsigned_part.substr(whole_digits);
  // A decimal point is a fraction only with digits after it ("1." is no number a field writes).
  const bool fraction = !after_digits.empty() && after_digits.front() == '.' &&
                        after_digits.size() > 1 &&
                        leading_digits(after_digits.substr(1)) == after_digits.size() - 1;
  if (!after_digits.empty() && !fraction) {
    return CostValue::refused(kNotANumber);
  }
  if (negative) {
    return CostValue::refused(kNegative);
  }
  if (fraction) {
    return CostValue::refused(kFractional);
  }
  std::uint64_t number = 0;
  for (const char digit : unsigned_part) {
    number = number * 10 + static_cast<std::uint64_t>(digit - '0');
    if (number > kMaxCost) {  // checked at each digit: no overflow however long the text
      return CostValue::refused(kTooLarge);
    }
  }
  return CostValue::of(number);
}

CostValue cost_of_integer(std::int64_t number) {
  if (number < 0) {
    return CostValue::refused(kNegative);
  }
  return cost_of_unsigned(static_cast<std::uint64_t>(number));
}

CostValue cost_of_unsigned(std::uint64_t number) {
  if (number > kMaxCost) {
    return CostValue::refused(kTooLarge);
  }
  return CostValue::of(number);
}

CostValue cost_of_double(double number) {
  if (number < 0) {
    return CostValue::refused(kNegative);
  }
  if (std::isfinite(number) && std::floor(number) != number) {
    return CostValue::refused(kFractional);
  }
  if (!(number <= static_cast<double>(kMaxCost))) {  // infinity too
    return CostValue::refused(kTooLarge);
  }
  return CostValue::of(static_cast<std::uint64_t>(number));
}

CostValue add_costs(const CostValue& a, const CostValue& b) {
  for (const CostValue* value : {&a, &b}) {
    if (value->state == CostValue::State::invalid) {
      return *value;
    }
  }
  if (a.state == CostValue::State::absent || b.state == CostValue::State::absent) {
    return {};
  }
  return cost_of_unsigned(a.number + b.number);  // each at most kMaxCost: no overflow
}

}  // namespace sluice::cost
