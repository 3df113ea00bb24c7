#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/decide.hpp"
#include "proxy/pipeline/ban_list.hpp"
#include "proxy/pipeline/cidr_trie.hpp"
#include "proxy/pipeline/descriptor_rules.hpp"
#include "proxy/pipeline/identity.hpp"
#include "proxy/pipeline/request_view.hpp"
#include "proxy/pipeline/route_table.hpp"
#include "proxy/pipeline/runtime_control.hpp"

namespace sluice::pipeline {

/// The seed of Charges::shared_key: fixed, so that every replica hashes a key alike. (Hash
/// flooding is no concern there: Redis's tables seed their own hashes.)
inline constexpr std::uint64_t kSharedKeySeed = 0x736c75696365;  // "sluice"

/// What happened to a request (SPEC §6's decisions).
enum class Outcome { allowed, delayed, limited, denied, no_route, unauthorized };
std::string_view name_of(Outcome outcome) noexcept;

/// One limiter that applied to a request: for the RateLimit headers, logs and replay.
struct LimiterReport {
  const config::LimiterConfig* limiter = nullptr;
  /// The parameters the key was counted with: the limiter's, its override's or its tier's.
  const limiter::LimiterOptions* options = nullptr;
  limiter::Verdict verdict;
  limiter::Status status;
  limiter::KeyHash key = 0;  ///< The key, hashed (for logs: never the key itself).
};

/// A permit that a concurrency limiter holds until the response is over.
struct Permit {
  limiter::Limiter* limiter = nullptr;  ///< The memory limiter that holds it.
  limiter::KeyHash key = 0;
  limiter::Permits cost = 0;
  limiter::KeyHash shared_key = 0;  ///< See Charges::shared_key.
  const config::LimiterConfig* config = nullptr;
  const limiter::LimiterOptions* options = nullptr;  ///< With the key's override applied.
};

/// A charge that waits for the response (SPEC §9): a `cost: response` or `count_if` limiter's.
struct LaterCharge {
  limiter::Limiter* limiter = nullptr;  ///< The memory limiter that counts it.
  limiter::KeyHash key = 0;
  limiter::Permits reserved = 0;  ///< Consumed at admission (cost: response's estimate).
  limiter::Permits cost = 0;      ///< count_if alone: the request's cost.
  limiter::TimePoint decided_at{};
  const config::LimiterConfig* config = nullptr;
  // For a shared store, which settles it in its own counters:
  const limiter::LimiterOptions* options = nullptr;  ///< With the key's override applied.
  limiter::KeyHash shared_key = 0;                   ///< See Charges::shared_key.
  std::int64_t store_decided_at = 0;  ///< The store's time of the decision (µs since the epoch).
};

/// What a request's response said, for its charges settled after it.
struct ResponseSaid {
  unsigned status = 0;  ///< 0: there was none (the client went away first).
  /// What the route's `cost_from` read; nullopt when the response said nothing usable.
  std::optional<limiter::Permits> cost;
};

/// What a charge that waited for the response is owed: `cost: response`, what the response
/// said it cost, else the route's estimate; `count_if`, the request's cost if the response's
/// status is listed (both: the former if it is), else nothing.
limiter::Permits owed_for(const config::Route& route, const LaterCharge& later,
                          const ResponseSaid& said) noexcept;

/// The pipeline's answer for one request. Fixed-size, so deciding allocates nothing.
struct Decision {
  Outcome outcome = Outcome::no_route;
  unsigned status = 404;  ///< 0: forward and let the upstream answer.
  const config::Route* route = nullptr;
  IpAddress client;
  bool banned = false;
  Authentication auth;              ///< The route's verification of the caller's token (SPEC §8).
  limiter::Duration hold{};         ///< Delay before forwarding (delay mode).
  limiter::Duration retry_after{};  ///< For 429 and bans.
  std::array<LimiterReport, limiter::kMaxChargesPerRequest> reports{};
  std::size_t report_count = 0;
  std::array<Permit, limiter::kMaxChargesPerRequest> permits{};
  std::size_t permit_count = 0;
  /// Nonzero when a shared store holds the permits, under this id (see Store::release).
  std::uint64_t store_permit = 0;
  std::array<LaterCharge, limiter::kMaxChargesSettledLater> later{};
  std::size_t later_count = 0;

  /// The limiters that applied (their key could be formed), in the route's order.
  std::span<const LimiterReport> applied() const noexcept { return {reports.data(), report_count}; }
};

/// The limiters one request must be charged, live ones first, then shadow ones: what a store
/// decides on. Fixed-size, like Decision.
struct Charges {
  std::array<limiter::Charge, limiter::kMaxChargesPerRequest> items{};
  /// Each charge's definition, its key's override applied (the Redis store sends it along).
  std::array<const limiter::LimiterOptions*, limiter::kMaxChargesPerRequest> options{};
  /// Each charge's report in Decision::reports.
  std::array<std::size_t, limiter::kMaxChargesPerRequest> report{};
  /// Each charge's key hashed alike in every process (items[i].key is seeded per process), so
  /// that replicas sharing a store find the same counters.
  std::array<limiter::KeyHash, limiter::kMaxChargesPerRequest> shared_key{};
  std::size_t live = 0;   ///< items[0, live) are live.
  std::size_t count = 0;  ///< items[live, count) are shadow.

  std::span<const limiter::Charge> live_items() const noexcept { return {items.data(), live}; }
  std::span<const limiter::Charge> shadow_items() const noexcept {
    return {items.data() + live, count - live};
  }
};

/// Whether a store could count a request's charges, and if not, what its failure policy
/// (`on_error`) makes of the request.
enum class Counted : std::uint8_t {
  yes,       ///< Counted: the outcomes are the limiters' answers.
  let_pass,  ///< Not counted, let through (`on_error: allow`): no limiter applied.
  refuse,    ///< Not counted, refused (`on_error: deny`): 503.
};

/// How long a client refused because the store failed is asked to wait.
inline constexpr limiter::Duration kStoreDownRetryAfter = std::chrono::seconds(1);

/// A store's answer for a request's charges: each one's verdict and status (in Charges order),
/// and whether the live ones and then the shadow ones admitted it, all or nothing.
struct ChargeResult {
  std::array<limiter::Outcome, limiter::kMaxChargesPerRequest> outcomes{};
  bool live_admitted = false;
  bool shadow_admitted = false;
  Counted counted = Counted::yes;
  /// Nonzero when the store holds the request's concurrency permits under this id.
  std::uint64_t store_permit = 0;
  /// A shared store's time of each charge's decision (µs since the epoch, on its clock; 0 in
  /// memory): what it was charged at is given back as of then.
  std::array<std::int64_t, limiter::kMaxChargesPerRequest> decided_at{};
};

/// One descriptor of an Envoy rate-limit request (SPEC §11): its entries, in order.
using Descriptor = std::span<const DescriptorEntry>;

/// What Pipeline::prepare_descriptors made of an Envoy rate-limit request.
enum class DescriptorsPrepared : std::uint8_t {
  charges,         ///< Some descriptors map to limiters: charge them, then conclude().
  none,            ///< None does: every descriptor is OK.
  unknown_domain,  ///< No `rls` domain has that name: every descriptor is OK (counted apart).
  too_many,        ///< More than kMaxChargesPerRequest limiters would decide it.
  limiter_twice,   ///< Two descriptors map to one limiter with different keys.
};

/// A descriptor that no limiter decides, in prepare_descriptors' `report_of`.
inline constexpr std::size_t kNoReport = static_cast<std::size_t>(-1);

/// The decision pipeline of SPEC §2, shared by the proxy and `sluice replay`: client address
/// (through trusted proxies), deny list, ban, route, the caller's token (SPEC §8), keys,
/// overrides, cost, then the route's limiters, all or nothing, and its shadow limiters. No network,
/// no clock: `now` is given. Thread-safe; `decide` does not allocate once its per-thread key buffer
/// has grown.
class Pipeline {
 public:
  /// `config` must outlive the pipeline. With a `previous` pipeline (a reload), the limiters and
  /// the ban list whose definition did not change keep their state: the new pipeline shares
  /// them with the old one, so requests still in flight on the old one count in the same place.
  /// Reads the JWT providers' key files: throws config::ConfigError when one cannot be used.
  explicit Pipeline(const config::ProxyConfig& config, const Pipeline* previous = nullptr);

  /// The whole decision, with the memory limiters.
  Decision decide(const RequestView& request, limiter::TimePoint now,
                  std::optional<limiter::Permits> cost = std::nullopt);

  /// decide() in two halves, so that another store can charge the limiters in between. The
  /// first half decides everything before the limiters; it returns false when `decision` is
  /// already final (denied, banned, no route), else the request's `charges` must be charged and
  /// their result given to conclude().
  bool prepare(const RequestView& request, limiter::TimePoint now,
               std::optional<limiter::Permits> cost, Decision& decision, Charges& charges);
  /// The first half of deciding an Envoy rate-limit request of `domain` (SPEC §11): each of
  /// `descriptors` that a rule of the domain maps to a limiter is that limiter's charge of
  /// `cost`, keyed by the descriptor's values; `report_of[d]` is descriptor d's report in
  /// `decision` (kNoReport: no limiter decides it, it is OK). A descriptor with the key of an
  /// earlier one's limiter adds to that charge. Charge `charges`, then conclude(), when it
  /// returns `charges`. `decision` has no route. Allocates nothing once warm.
  DescriptorsPrepared prepare_descriptors(std::string_view domain,
                                          std::span<const Descriptor> descriptors,
                                          limiter::Permits cost, limiter::TimePoint now,
                                          Decision& decision, Charges& charges,
                                          std::span<std::size_t> report_of);
  /// Charges the memory limiters (the memory store; also the Redis store's `on_error: local`).
  static ChargeResult charge_locally(const Charges& charges, limiter::TimePoint now);
  /// Files each limiter's outcome and settles the decision: limited, delayed or allowed, or, when
  /// the store could not count, as its policy says. The one place a request is concluded.
  void conclude(Decision& decision, const Charges& charges, const ChargeResult& result,
                limiter::TimePoint now);
  /// Gives back the concurrency permits that the memory limiters hold for a finished request.
  static void release_locally(const Decision& decision) noexcept;
  /// Settles the charges that waited for the response with the memory limiters: each is
  /// charged what it is owed (owed_for) less what it reserved at admission, or given back the
  /// difference when it reserved more.
  static void settle_locally(const Decision& decision, const ResponseSaid& said,
                             limiter::TimePoint now) noexcept {
    settle_locally(*decision.route, {decision.later.data(), decision.later_count}, said, now);
  }
  /// The same for charges kept apart from their decision (replay settles them later).
  static void settle_locally(const config::Route& route, std::span<const LaterCharge> later,
                             const ResponseSaid& said, limiter::TimePoint now) noexcept;
  /// Drops the idle keys of every limiter; call from a timer.
  void collect_idle(limiter::TimePoint now);

  /// The state of one key of a limiter, without consuming anything ("why was I limited?").
  /// `key_text` is the key as the pipeline forms it (for a composite key, parts joined with
  /// `+`), and for a limiter with tiers, the key's `tier` value (without it, the limiter's own
  /// parameters count). nullopt when no limiter has that name.
  std::optional<limiter::Status> peek(std::string_view limiter_name, std::string_view key_text,
                                      limiter::TimePoint now,
                                      std::optional<std::string_view> tier = std::nullopt);
  /// Which of its limiter's instances counted a report's key: 0 the limiter's own, 1 + i its
  /// override i, 1 + overrides + i its tier i. With peek_counted, a key's state is found again
  /// from its hash alone (a secret key's text is never kept).
  static std::size_t instance_of(const LimiterReport& report) noexcept;
  /// The state of the key hashed `key` (LimiterReport::key) in instance `instance` (instance_of)
  /// of the limiter at `limiter_index` in the configuration, without consuming anything; nullopt
  /// when there is no such instance.
  std::optional<limiter::Status> peek_counted(std::size_t limiter_index, std::size_t instance,
                                              limiter::KeyHash key, limiter::TimePoint now);
  /// How much longer a client address stays banned (by `ban:` or at runtime); nullopt when not
  /// banned.
  std::optional<limiter::Duration> banned_for(const IpAddress& client, limiter::TimePoint now);

  /// Runtime overrides and bans (SPEC §10) to obey from now on; a pipeline built from this one
  /// (a reload) obeys the same. Set once, before serving.
  void use(std::shared_ptr<RuntimeControl> control) { control_ = std::move(control); }
  const std::shared_ptr<RuntimeControl>& control() const noexcept { return control_; }
  /// Forgets one key of a limiter in the memory limiters (SPEC §10 reset): in its own, in those
  /// of its overrides and tiers, and in its runtime override's. A concurrency limiter's permits
  /// are requests still in flight, not a budget spent: they are kept. nullopt when no limiter
  /// has that name; else the definitions the key may be counted under elsewhere (a shared
  /// store), concurrency ones left out.
  std::optional<std::vector<limiter::LimiterOptions>> forget(std::string_view limiter_name,
                                                             std::string_view key_text,
                                                             limiter::TimePoint now);
  /// Ends a ban that `ban:` gave `client`; false when it had none.
  bool lift_ban(const IpAddress& client, limiter::TimePoint now);

  const config::ProxyConfig& config() const noexcept { return config_; }
  /// The JWT providers and their keys (a fetched key set is filled and refreshed from outside).
  const Identity& identity() const noexcept { return identity_; }
  /// How many limiters (overrides included) and ban lists came with their state from `previous`.
  std::size_t kept_state() const noexcept { return kept_state_; }
  /// Keys tracked now, per limiter (its overrides included), in config order.
  std::vector<std::pair<std::string_view, std::uint64_t>> limiter_keys() const;

 private:
  struct LimiterSlot {
    const config::LimiterConfig* config = nullptr;
    std::shared_ptr<limiter::Limiter> main;  ///< Shared with the next pipeline on a reload.
    /// Key text (parts joined as build_key joins them) → that key's own limiter.
    std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>> overrides;
    /// Tier key text → the limiter of the keys in that tier.
    std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>> tiers;
  };
  /// The limiter that counts `key_text` (its override's, if it has one, else its tier's, when
  /// `tier_text` names a listed tier), and its definition.
  static std::pair<limiter::Limiter*, const limiter::LimiterOptions*> instance_for(
      LimiterSlot& slot, std::string_view key_text,
      std::optional<std::string_view> tier_text) noexcept;

  /// One limiter's charge for a request, before it is placed among the live or shadow ones.
  struct Found {
    limiter::Charge charge;
    limiter::KeyHash shared_key = 0;
    const limiter::LimiterOptions* options = nullptr;
    std::size_t report = 0;  ///< In Decision::reports.
  };
  /// The charge of `cost` for `key_text` on `slot`'s limiter (the instance its runtime
  /// override, override or tier says), filed as the decision's next report.
  Found charge_of(LimiterSlot& slot, std::string_view key_text,
                  std::optional<std::string_view> tier_text, limiter::Permits cost,
                  const RuntimeSnapshot* runtime, limiter::TimePoint now, Decision& decision);
  /// Places a request's charges as they are found: the live ones at once, the shadow ones
  /// after every live one (finish()).
  class ChargeOrder {
   public:
    explicit ChargeOrder(Charges& charges) noexcept : charges_(charges) {}
    void add(const Found& found, bool shadow) noexcept;
    void finish() noexcept;
    /// The charge (placed or waiting) that files its outcome in report `report`, or null.
    limiter::Charge* charge_of_report(std::size_t report) noexcept;

   private:
    void place(std::size_t i, const Found& found) noexcept;

    Charges& charges_;
    std::array<Found, limiter::kMaxChargesPerRequest> shadow_{};
    std::size_t shadow_count_ = 0;
  };

  /// The limiters of `values` (overrides or tiers), each kept from `before` where its value and
  /// parameters did not change.
  std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>> instances_for(
      const std::vector<config::Override>& values,
      const std::vector<std::pair<std::string, std::shared_ptr<limiter::Limiter>>>* before,
      const std::vector<config::Override>* before_values);

  const config::ProxyConfig& config_;
  Identity identity_;
  RouteTable routes_;
  DescriptorRules descriptor_rules_;
  CidrTrie deny_;
  std::shared_ptr<BanList> ban_;
  std::vector<LimiterSlot> limiters_;
  std::vector<std::vector<std::size_t>> route_limiters_;  ///< Per route, into limiters_.
  /// Per route: the provider that verifies its tokens, or null.
  std::vector<const config::JwtProviderConfig*> route_providers_;
  std::size_t kept_state_ = 0;
  std::shared_ptr<RuntimeControl> control_;  ///< Null: nothing at runtime (replay, tests).
};

}  // namespace sluice::pipeline
