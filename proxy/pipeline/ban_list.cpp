#include "proxy/pipeline/ban_list.hpp"

#include <string_view>

#include "limiter/key_hash.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::pipeline {

BanList::BanList(const config::BanOptions& options, std::uint64_t max_keys)
    : strikes_(limiter::make_limiter({.algorithm = limiter::AlgorithmKind::sliding_log,
                                      .limit = options.after,
                                      .window = options.within,
                                      .max_keys = max_keys})),
      bans_(limiter::make_limiter({.algorithm = limiter::AlgorithmKind::token_bucket,
                                   .rate = {.permits = 1, .period = options.duration},
                                   .burst = 1,
                                   .max_keys = max_keys})) {}

limiter::KeyHash BanList::hash(const IpAddress& client) noexcept {
  return limiter::hash_key(
      std::string_view(reinterpret_cast<const char*>(client.bytes.data()), client.ipv4 ? 4 : 16));
}

std::optional<limiter::Duration> BanList::banned_for(const IpAddress& client,
                                                     limiter::TimePoint now) {
  // A ban is the token taken; it lasts while the bucket is refilling (reset > 0). Testing
  // `remaining` instead would forgive the float tolerance and end the ban a little early.
  const limiter::Status status = bans_->peek(hash(client), now);
  if (status.reset <= limiter::Duration::zero()) {
    return std::nullopt;
  }
  return status.reset;
}

bool BanList::strike(const IpAddress& client, limiter::TimePoint now) {
  const limiter::KeyHash key = hash(client);
  const limiter::Outcome outcome = strikes_->decide(key, now, 1);
  // The `after`-th strike within `within` fills the log: that one bans.
  if (outcome.verdict.admitted && outcome.status.remaining > 0) {
    return false;
  }
  bans_->decide(key, now, 1);
  return true;
}

bool BanList::lift(const IpAddress& client, limiter::TimePoint now) {
  const bool banned = banned_for(client, now).has_value();
  const limiter::KeyHash key = hash(client);
  strikes_->forget(key);
  bans_->forget(key);
  return banned;
}

}  // namespace sluice::pipeline
