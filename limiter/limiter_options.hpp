#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "limiter/calendar.hpp"
#include "limiter/rate.hpp"
#include "limiter/time.hpp"
#include "limiter/verdict.hpp"

namespace sluice::limiter {

enum class AlgorithmKind : std::uint8_t {
  fixed_window,
  sliding_log,
  sliding_window,
  wheel,
  token_bucket,
  leaky_bucket,
  concurrency,
};

/// The config spelling ("sliding_window"), and back.
std::string_view name_of(AlgorithmKind kind) noexcept;
std::optional<AlgorithmKind> algorithm_named(std::string_view name) noexcept;

/// Every parameter of SPEC §2's limiter table; each algorithm reads the ones it needs.
struct LimiterOptions {
  AlgorithmKind algorithm = AlgorithmKind::token_bucket;
  std::uint64_t limit = 0;  ///< Windows and concurrency.
  Duration window{};        ///< Windows.
  /// fixed_window: windows on calendar boundaries (instead of `window`), in `time_zone` (null:
  /// UTC; zones live as long as the process, so equal zones are one pointer).
  Calendar calendar = Calendar::none;
  const TimeZone* time_zone = nullptr;
  std::uint64_t slots = 10;  ///< wheel.
  Rate rate{};               ///< token_bucket, leaky_bucket.
  std::optional<double> burst =
      std::nullopt;        ///< token_bucket: one second of rate, at least 1; leaky: 0.
  Duration warmup{};       ///< token_bucket: > 0 selects Guava's SmoothWarmingUp.
  double cold_factor = 3;  ///< token_bucket with warmup.
  Policy policy{};         ///< mode and max_delay.
  std::uint64_t max_keys = 1'000'000;

  bool operator==(const LimiterOptions&) const = default;
};

}  // namespace sluice::limiter
