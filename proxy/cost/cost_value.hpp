#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

namespace sluice::cost {

/// The largest cost a response may report: a limiter charges at most this many permits at once
/// (the limiter's `Permits` are 32-bit).
inline constexpr std::uint64_t kMaxCost = std::numeric_limits<std::uint32_t>::max();

/// Why a value is not a cost: short static texts for the access log.
inline constexpr std::string_view kNegative = "negative";
inline constexpr std::string_view kFractional = "fractional";
inline constexpr std::string_view kTooLarge = "too large";
inline constexpr std::string_view kNotANumber = "not a number";
inline constexpr std::string_view kMalformedJson = "malformed JSON";
inline constexpr std::string_view kNestedTooDeeply = "nested too deeply";

/// One value as a response gave it: nothing yet, a whole number in 0..kMaxCost, or something
/// else with the reason it cannot be charged.
struct CostValue {
  enum class State : std::uint8_t { absent, number, invalid };
  State state = State::absent;
  std::uint64_t number = 0;  ///< With `number`.
  std::string_view why;      ///< With `invalid`: one of the texts above.

  static constexpr CostValue of(std::uint64_t number) { return {State::number, number, {}}; }
  static constexpr CostValue refused(std::string_view why) { return {State::invalid, 0, why}; }

  bool operator==(const CostValue&) const = default;
};

/// A header's or a trailer's value: digits, with spaces or tabs around them and nothing else.
/// "-5" is negative, "1.5" fractional (so is "1.0": a field has no reason to write one),
/// "99999999999" too large, "", "+5" or "abc" not a number.
CostValue read_cost_text(std::string_view text);

/// A JSON number as the parser reads it. A double counts when it is whole (`12.0`, `1e3`): some
/// encoders write every number so; one with a fraction is refused rather than rounded.
CostValue cost_of_integer(std::int64_t number);
CostValue cost_of_unsigned(std::uint64_t number);
CostValue cost_of_double(double number);

/// The sum of two values, both needed: an invalid one makes it invalid (the first one's reason),
/// else an absent one makes it absent; a sum beyond kMaxCost is too large.
CostValue add_costs(const CostValue& a, const CostValue& b);

}  // namespace sluice::cost
