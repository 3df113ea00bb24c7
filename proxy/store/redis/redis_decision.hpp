#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/resp.hpp"

namespace sluice::store::redis {

/// How long Redis keeps a concurrency permit whose request never gave it back (its replica
/// died): long enough for any request, short enough that a dead replica's permits come back.
inline constexpr limiter::Duration kConcurrencyLease = std::chrono::minutes(10);

/// How the store names its keys: the prefix, and where the hash tag goes.
struct KeyLayout {
  std::string_view prefix;
  /// false: `{prefix}limiter:definition:key`, the whole prefix the hash tag (one Redis).
  /// true (Redis Cluster): `prefix limiter:definition:{key}`, the key's hash the tag, so that keys
  /// spread over the slots, and the limiters of one client (same key) share a slot.
  bool cluster = false;
};
/// The layout of a store configured with `options`.
inline KeyLayout layout_of(const config::RedisOptions& options) noexcept {
  return {options.prefix, options.cluster};
}

/// The Redis key of one limiter's key, as `layout` says. `definition` hashes the parameters
/// that shape the stored state, so a changed definition starts afresh, as the memory store's
/// reload does, and replicas on different definitions never misread each other's state.
/// Appends to `out`.
void append_redis_key(std::string& out, const KeyLayout& layout, std::string_view limiter_name,
                      const limiter::LimiterOptions& options, limiter::KeyHash key);

/// The Redis Cluster slot of a key in the cluster layout (which only its hash decides).
std::uint16_t cluster_slot(limiter::KeyHash key) noexcept;

/// A 64-bit identity of the Redis key append_redis_key writes (for one prefix): the over-limit
/// cache's key, computed without the text.
std::uint64_t redis_key_id(std::string_view limiter_name, const limiter::LimiterOptions& options,
                           limiter::KeyHash key) noexcept;

/// Per charge of a request, its key's redis_key_id(): the key as the over-limit cache and the
/// leases know it.
using KeyIds = std::array<std::uint64_t, limiter::kMaxChargesPerRequest>;
inline KeyIds key_ids(const pipeline::Decision& decision, const pipeline::Charges& charges) {
  KeyIds ids{};
  for (std::size_t i = 0; i < charges.count; ++i) {
    ids[i] = redis_key_id(decision.reports[charges.report[i]].limiter->name, *charges.options[i],
                          charges.shared_key[i]);
  }
  return ids;
}

/// One charge of a finished request settled in Redis (SPEC §9): `amount` is what the response
/// said it owes beyond what it reserved at admission, charged whether it fits or not, or, when
/// negative, what it reserved beyond that, given back as of its decision.
struct Settlement {
  const config::LimiterConfig* limiter = nullptr;
  const limiter::LimiterOptions* options = nullptr;  ///< With the key's override applied.
  limiter::KeyHash shared_key = 0;                   ///< See pipeline::Charges::shared_key.
  std::int64_t amount = 0;
};

/// One call of decide.lua for many requests' charges: its arguments, built in buffers that keep
/// their capacity from call to call.
class BatchCall {
 public:
  /// Empties the call, keeping the buffers.
  void clear();
  /// Adds one request: its `charges` (whose limiter names are in `decision`'s reports), held
  /// under `permit` (the id its concurrency permits get), at the proxy's time `now` (which
  /// places calendar windows).
  void add(const KeyLayout& layout, const pipeline::Decision& decision,
           const pipeline::Charges& charges, std::uint64_t permit, limiter::TimePoint now);
  /// Adds the settlement of a finished request's charges on one node, decided under `permit` at
  /// `decided_at` (µs, Redis's time), at the proxy's time `now`. Its definitions are written out
  /// afresh, never shared with a request's: the request it settles may be gone, and with it the
  /// configuration its definitions' addresses belong to.
  void add_settlement(const KeyLayout& layout, std::span<const Settlement> settled,
                      std::uint64_t permit, std::int64_t decided_at, limiter::TimePoint now);
  /// Adds the renewal of a lease: `amount` permits of the key `redis_key` (append_redis_key()),
  /// counted as `options` defines it, alone, as a request of one live limiter decided under
  /// `permit`. Its definition is written out afresh, as a settlement's: `options` is the lease's
  /// copy, whose address another key's lease may take over.
  void add_renewal(std::string_view redis_key, const limiter::LimiterOptions& options,
                   limiter::Permits amount, std::uint64_t permit, limiter::TimePoint now);
  /// Requests, settlements and renewals added.
  std::size_t requests() const noexcept { return requests_; }
  /// The whole command: `command` (FCALL or EVALSHA) of `target` (the function's name or the
  /// script's SHA1) over the requests added. `now`: the time to decide at; nullopt = Redis's own
  /// clock (the proxy's way: replicas agree). `keys_as_arguments`: declare no key (Redis
  /// Cluster's decide_in_cluster). Valid until the next change.
  std::span<const std::string_view> arguments(std::string_view command, std::string_view target,
                                              std::optional<limiter::TimePoint> now = std::nullopt,
                                              bool keys_as_arguments = false);

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
  std::size_t definition(const limiter::LimiterOptions& options, limiter::TimePoint now);

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
/// The time a decide.lua reply was decided at (its first element, µs since the epoch), and the
/// index of the first request's part; nullopt when the reply does not start so.
std::optional<std::pair<std::int64_t, std::size_t>> decided_at(const RespValue& reply) noexcept;
/// Reads the part of a decide.lua `reply` (an array) that starts at element `at`, for `charges`,
/// into `result`, and moves `at` past it.
DecisionReply read_decision(const RespValue& reply, std::size_t& at,
                            const pipeline::Charges& charges, pipeline::ChargeResult& result);
/// Skips the part of a decide.lua `reply` that starts at element `at` for a settlement of `count`
/// charges (their statuses, which nobody reads: the response has left), and moves `at` past it.
DecisionReply read_settlement(const RespValue& reply, std::size_t& at, std::size_t count);
/// What made the first failed request of a reply fail: its last element, after the requests'
/// parts (which end at `at`); empty if there is none.
std::string_view failure_of(const RespValue& reply, std::size_t at) noexcept;

/// The arguments of release.lua for one permit of a finished request.
struct ReleaseCall {
  std::string key;
  std::string permit;
  std::string cost;
};
ReleaseCall release_call(const KeyLayout& layout, const pipeline::Permit& permit, std::uint64_t id);

/// One charge for refund.lua to take back: its key (as append_redis_key writes it), definition,
/// cost and hold.
struct RefundItem {
  std::string_view key;
  const limiter::LimiterOptions* options;
  limiter::Permits cost;
  limiter::Duration hold;
};
/// The command of refund.lua (the function `target`) for `items`, charged under `permit` at
/// `decided_at` (µs, Redis's time). `now`: nullopt = Redis's clock.
std::vector<std::string> refund_command(std::string_view target, std::span<const RefundItem> items,
                                        std::uint64_t permit, std::int64_t decided_at,
                                        std::optional<limiter::TimePoint> now);

/// A call of refund.lua: its command, and which charges it takes back (indices in the Charges it
/// was made for), whose statuses its reply gives in that order.
struct RefundCall {
  std::vector<std::string> command;
  std::vector<std::size_t> charges;
};
/// The call of refund.lua (the function `target`) that takes back the charges of `charges`
/// that `decided` says were committed (the live ones if admitted, the shadow ones if admitted,
/// as `live` and `shadow` ask), decided at `decided_at` (µs, the reply's). `now`: nullopt =
/// Redis's clock. No charges when there is nothing to take back.
RefundCall refund_call(std::string_view target, const KeyLayout& layout,
                       const pipeline::Decision& decision, const pipeline::Charges& charges,
                       const pipeline::ChargeResult& decided, bool live, bool shadow,
                       std::uint64_t permit, std::int64_t decided_at,
                       std::optional<limiter::TimePoint> now);
/// Reads refund.lua's reply into the statuses of the charges `call` took back; false when the
/// reply is not refund.lua's.
bool read_refund(const RespValue& reply, const RefundCall& call, pipeline::ChargeResult& result);

}  // namespace sluice::store::redis
