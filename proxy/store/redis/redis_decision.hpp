#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/resp.hpp"

namespace sluice::store::redis {

/// How long Redis keeps a concurrency permit whose request never gave it back (its replica
/// died): long enough for any request, short enough that a dead replica's permits come back.
inline constexpr limiter::Duration kConcurrencyLease = std::chrono::minutes(10);

/// The Redis key of one limiter's key: `{prefix}limiter:definition:key`. The whole prefix is the
/// hash tag, so that every key of one script call lies in one Redis Cluster slot. `definition`
/// hashes the parameters that shape the stored state, so a changed definition starts afresh, as
/// the memory store's reload does, and replicas on different definitions never misread each
/// other's state. Appends to `out`.
void append_redis_key(std::string& out, std::string_view prefix, std::string_view limiter_name,
                      const limiter::LimiterOptions& options, limiter::KeyHash key);

/// A 64-bit identity of the Redis key append_redis_key writes (for one prefix): the over-limit
/// cache's key, computed without the text.
std::uint64_t redis_key_id(std::string_view limiter_name, const limiter::LimiterOptions& options,
                           limiter::KeyHash key) noexcept;

/// One call of the decision script (proxy/lua/decide.lua) for one request's charges: its
/// arguments, built in buffers that keep their capacity from call to call.
class DecisionCall {
 public:
  /// EVALSHA `sha` over `charges` (whose limiter names are in `decision`'s reports). `now`:
  /// the time to decide at; nullopt = Redis's own clock (the proxy's way: replicas agree).
  /// `permit`: the id the request's concurrency permits are held under.
  void build(std::string_view sha, std::string_view prefix, const pipeline::Decision& decision,
             const pipeline::Charges& charges, std::uint64_t permit,
             std::optional<limiter::TimePoint> now = std::nullopt);
  /// The arguments, EVALSHA first; valid until the next build().
  std::span<const std::string_view> arguments() const noexcept { return arguments_; }

 private:
  std::string text_;
  std::vector<std::size_t> ends_;  ///< Where each argument ends in text_.
  std::vector<std::string_view> arguments_;
};

/// Reads the script's reply for `charges` into `result`. False when the reply is not the one
/// the script gives (an error reply, or a script of another version).
bool read_decision(const RespValue& reply, const pipeline::Charges& charges,
                   pipeline::ChargeResult& result);

/// The arguments of release.lua for one permit of a finished request.
struct ReleaseCall {
  std::string key;
  std::string permit;
  std::string cost;
};
ReleaseCall release_call(std::string_view prefix, const pipeline::Permit& permit, std::uint64_t id);

}  // namespace sluice::store::redis
