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

/// One call of decide.lua for many requests' charges: its arguments, built in buffers that keep
/// their capacity from call to call.
class BatchCall {
 public:
  /// Empties the call, keeping the buffers.
  void clear();
  /// Adds one request: its `charges` (whose limiter names are in `decision`'s reports), held
  /// under `permit` (the id its concurrency permits get).
  void add(std::string_view prefix, const pipeline::Decision& decision,
           const pipeline::Charges& charges, std::uint64_t permit);
  std::size_t requests() const noexcept { return requests_; }
  /// The whole command: `command` (FCALL or EVALSHA) of `target` (the function's name or the
  /// script's SHA1) over the requests added. `now`: the time to decide at; nullopt = Redis's own
  /// clock (the proxy's way: replicas agree). Valid until the next change.
  std::span<const std::string_view> arguments(std::string_view command, std::string_view target,
                                              std::optional<limiter::TimePoint> now = std::nullopt);

 private:
  /// Text with the end of each argument: keys and values go in separate ones, since the keys
  /// come first in the command.
  struct Words {
    std::string text;
    std::vector<std::size_t> ends;
    void end() { ends.push_back(text.size()); }
    void view_into(std::vector<std::string_view>& out) const;
  };
  /// The index (1-based) of `options` among the call's definitions, added if it is new.
  std::size_t definition(const limiter::LimiterOptions& options);

  Words keys_;
  Words definitions_;  ///< 7 values per definition: algorithm, policy, parameters.
  Words values_;       ///< Per request: its counts, permit, and each limiter's definition and cost.
  Words head_;         ///< numkeys, now, the request and definition counts, built last.
  std::vector<const limiter::LimiterOptions*> defined_;  ///< Few: a linear search finds them.
  std::size_t requests_ = 0;
  std::vector<std::string_view> arguments_;
};

/// How one request's part of a decide.lua reply reads.
enum class DecisionReply {
  decided,    ///< `result` holds the decision
  failed,     ///< Redis could not decide it (an error in its script call); see failure_of()
  malformed,  ///< not what decide.lua answers: the rest of the reply cannot be trusted
};
/// Reads the part of a decide.lua `reply` (an array) that starts at element `at`, for `charges`,
/// into `result`, and moves `at` past it.
DecisionReply read_decision(const RespValue& reply, std::size_t& at,
                            const pipeline::Charges& charges, pipeline::ChargeResult& result);
/// What made the first failed request of a reply fail: its last element, after the requests'
/// parts (which end at `at`); empty if there is none.
std::string_view failure_of(const RespValue& reply, std::size_t at) noexcept;

/// The arguments of release.lua for one permit of a finished request.
struct ReleaseCall {
  std::string key;
  std::string permit;
  std::string cost;
};
ReleaseCall release_call(std::string_view prefix, const pipeline::Permit& permit, std::uint64_t id);

}  // namespace sluice::store::redis
