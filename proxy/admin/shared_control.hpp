#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proxy/http/loop_context.hpp"
#include "proxy/pipeline/runtime_control.hpp"

namespace sluice::admin {

/// How runtime overrides and bans are written in a shared store's tables (SPEC §10), so that
/// every replica reads what one wrote: an override's field is `LIMITER\nKEY`, its value
/// `{"parameters":{…},"expires_at":MS}`; a ban's field is the IP, its value `{"expires_at":MS}`
/// (ms since the Unix epoch).
std::string override_field(const pipeline::OverrideEntry& entry);
std::string override_value(const pipeline::OverrideEntry& entry);
std::optional<pipeline::OverrideEntry> override_from(std::string_view field,
                                                     std::string_view value);
std::string ban_value(const pipeline::BanEntry& entry);
std::optional<pipeline::BanEntry> ban_from(std::string_view field, std::string_view value);

/// Reads a shared store's tables into the process's runtime control, for the configuration in
/// force. Throws store::StoreError when the store does not answer. Nothing to do in memory.
io::Awaitable<void> pull_shared_control(http::LoopContext& context);

/// Keeps the runtime control current, twice a second on one loop, while the process runs: what
/// the shared store holds (what other replicas wrote, seen within a second), the keys they
/// forgot, and after a reload, the overrides laid over the limiters' new parameters.
io::Awaitable<void> follow_runtime_control(http::LoopContext& context);

}  // namespace sluice::admin
