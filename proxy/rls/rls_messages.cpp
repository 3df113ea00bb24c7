#include "proxy/rls/rls_messages.hpp"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>

namespace sluice::rls {

namespace {

using RateLimit = envoy::service::ratelimit::v3::RateLimitResponse::RateLimit;

std::uint32_t read_length(std::string_view prefix) noexcept {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[1])) << 24 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[3])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[4]));
}

// Envoy's units from the shortest, as current_limit() tries them.
constexpr std::array kUnits = {RateLimit::SECOND, RateLimit::MINUTE, RateLimit::HOUR,
                               RateLimit::DAY,    RateLimit::MONTH,  RateLimit::YEAR};

constexpr std::int64_t kSecondsPerDay = 86'400;

// A limiter's limit as `count` permits per `period`; `unit`: the calendar unit that period is,
// if any (a calendar month is a MONTH, though not 30 days long).
struct LimitShape {
  double count = 0;
  limiter::Duration period{};
  std::optional<RateLimitUnit> unit;
};

std::optional<LimitShape> shape_of(const limiter::LimiterOptions& options) noexcept {
  using limiter::AlgorithmKind;
  switch (options.algorithm) {
    case AlgorithmKind::concurrency:
      return std::nullopt;
    case AlgorithmKind::token_bucket:
    case AlgorithmKind::leaky_bucket:
      return LimitShape{options.rate.permits, options.rate.period, std::nullopt};
    case AlgorithmKind::fixed_window:
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
    case AlgorithmKind::wheel:
      break;
  }
  const auto count = static_cast<double>(options.limit);
  const auto days = [](std::int64_t n) { return std::chrono::seconds(n * kSecondsPerDay); };
  switch (options.calendar) {
    case limiter::Calendar::none:
      return LimitShape{count, options.window, std::nullopt};
    case limiter::Calendar::day:
      return LimitShape{count, days(1), RateLimit::DAY};
    case limiter::Calendar::week:
      return LimitShape{count, days(7), std::nullopt};
    case limiter::Calendar::month:
      return LimitShape{count, days(30), RateLimit::MONTH};
    case limiter::Calendar::year:
      return LimitShape{count, days(365), RateLimit::YEAR};
  }
  return std::nullopt;
}

std::uint32_t saturated(double count) noexcept {
  constexpr auto kMax = std::numeric_limits<std::uint32_t>::max();
  return count >= static_cast<double>(kMax) ? kMax : static_cast<std::uint32_t>(count);
}

bool is_whole(double value) noexcept {
  return std::abs(value - std::round(value)) <= 1e-9 * std::max(1.0, value);
}

}  // namespace

std::string_view name_of(Framing framing) noexcept {
  switch (framing) {
    case Framing::one_message:
      return "one message";
    case Framing::empty:
      return "empty";
    case Framing::truncated:
      return "truncated";
    case Framing::compressed:
      return "compressed";
    case Framing::bad_flag:
      return "bad flag";
    case Framing::too_large:
      return "too large";
    case Framing::more_messages:
      return "more than one message";
    case Framing::trailing_bytes:
      return "trailing bytes";
  }
  return "?";
}

std::uint8_t grpc_status_of(Framing framing) noexcept {
  switch (framing) {
    case Framing::one_message:
      return 0;
    case Framing::compressed:
      return 12;
    case Framing::too_large:
      return 8;
    case Framing::empty:
    case Framing::truncated:
    case Framing::bad_flag:
    case Framing::more_messages:
    case Framing::trailing_bytes:
      break;
  }
  return 3;  // INVALID_ARGUMENT: the client sent what is no request
}

Unframed unframe_request(std::string_view body) noexcept {
  if (body.empty()) {
    return {Framing::empty, {}};
  }
  if (body.size() < kPrefixBytes) {
    return {Framing::truncated, {}};
  }
  // The flag first: a compressed call is one we cannot read at all, whatever else it holds.
  if (body[0] == 1) {
    return {Framing::compressed, {}};
  }
  if (body[0] != 0) {
    return {Framing::bad_flag, {}};
  }
  const std::uint32_t length = read_length(body);
  if (length > kMaxMessageBytes) {
    return {Framing::too_large, {}};
  }
  if (body.size() - kPrefixBytes < length) {
    return {Framing::truncated, {}};
  }
  const std::string_view rest = body.substr(kPrefixBytes + length);
  if (rest.empty()) {
    return {Framing::one_message, body.substr(kPrefixBytes, length)};
  }
  if (rest.size() >= kPrefixBytes && rest.size() - kPrefixBytes >= read_length(rest)) {
    return {Framing::more_messages, {}};
  }
  return {Framing::trailing_bytes, {}};
}

bool parse_request(std::string_view message, RateLimitRequest& request) {
  if (message.size() > static_cast<std::size_t>(INT_MAX)) {
    request.Clear();
    return false;
  }
  return request.ParseFromArray(message.data(), static_cast<int>(message.size()));
}

void discard_protobuf_log() noexcept { google::protobuf::SetLogHandler(nullptr); }

void encode_response(const RateLimitResponse& response, std::string& out) {
  const std::size_t size = response.ByteSizeLong();
  out.resize(kPrefixBytes + size);
  out[0] = 0;
  out[1] = static_cast<char>(size >> 24 & 0xff);
  out[2] = static_cast<char>(size >> 16 & 0xff);
  out[3] = static_cast<char>(size >> 8 & 0xff);
  out[4] = static_cast<char>(size & 0xff);
  // ByteSizeLong() has just cached the sizes the serializer reads.
  response.SerializeWithCachedSizesToArray(
      reinterpret_cast<std::uint8_t*>(out.data() + kPrefixBytes));
}

std::int64_t seconds_in(RateLimitUnit unit) noexcept {
  switch (unit) {
    case RateLimit::SECOND:
      return 1;
    case RateLimit::MINUTE:
      return 60;
    case RateLimit::HOUR:
      return 3'600;
    case RateLimit::DAY:
      return kSecondsPerDay;
    case RateLimit::MONTH:
      return 30 * kSecondsPerDay;
    case RateLimit::YEAR:
      return 365 * kSecondsPerDay;
    default:
      return 0;
  }
}

std::optional<CurrentLimit> current_limit(const limiter::LimiterOptions& options) noexcept {
  const std::optional<LimitShape> shape = shape_of(options);
  if (!shape || shape->period.count() <= 0) {
    return std::nullopt;
  }
  std::optional<RateLimitUnit> exact_unit = shape->unit;
  for (const RateLimitUnit unit : kUnits) {
    if (!exact_unit && shape->period == std::chrono::seconds(seconds_in(unit))) {
      exact_unit = unit;
    }
  }
  if (shape->count <= 0) {
    return CurrentLimit{0, exact_unit.value_or(RateLimit::SECOND)};
  }
  if (exact_unit && is_whole(shape->count)) {
    return CurrentLimit{saturated(std::round(shape->count)), *exact_unit};
  }
  const auto period_ns = static_cast<double>(shape->period.count());
  double per_unit = 0;
  for (const RateLimitUnit unit : kUnits) {
    per_unit = shape->count * static_cast<double>(seconds_in(unit)) * 1e9 / period_ns;
    if (per_unit >= 1 && is_whole(per_unit)) {
      return CurrentLimit{saturated(std::round(per_unit)), unit};
    }
  }
  return CurrentLimit{std::max<std::uint32_t>(1, saturated(std::floor(per_unit))), RateLimit::YEAR};
}

void set_duration(limiter::Duration duration, google::protobuf::Duration& out) noexcept {
  // duration_cast truncates towards zero: the nanoseconds left have the seconds' sign.
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(duration);
  out.set_seconds(seconds.count());
  out.set_nanos(static_cast<std::int32_t>((duration - seconds).count()));
}

}  // namespace sluice::rls
