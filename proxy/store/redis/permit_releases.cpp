#include "proxy/store/redis/permit_releases.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace sluice::store::redis {

std::vector<pipeline::Permit> PermitReleases::permits_of(const pipeline::Decision& decision,
                                                         const pipeline::Charges& charges) {
  std::vector<pipeline::Permit> permits;
  for (std::size_t i = 0; i < charges.count; ++i) {
    if (charges.options[i]->algorithm == limiter::AlgorithmKind::concurrency) {
      const limiter::Charge& charge = charges.items[i];
      permits.push_back({charge.limiter, charge.key, charge.cost, charges.shared_key[i],
                         decision.reports[charges.report[i]].limiter, charges.options[i]});
    }
  }
  return permits;
}

void PermitReleases::send(const std::vector<pipeline::Permit>& permits, std::uint64_t id) {
  for (const pipeline::Permit& permit : permits) {
    const std::uint16_t index = routing_.lane_of(permit.shared_key);
    RedisConnection* connection = index == SlotMap::kNone ? nullptr : lanes_.pick(lanes_[index]);
    if (connection == nullptr) {
      continue;  // the lease will end the permit
    }
    net::co_spawn(
        connection->get_executor(),
        run(connection->shared_from_this(), {release_call(layout_of(options_), permit, id)}),
        net::detached);
  }
}

// A member, not a lambda: a coroutine lambda's captures live in the closure, which is gone
// once co_spawn has been called; a member function's frame keeps `this` itself.
io::Awaitable<void> PermitReleases::run(std::shared_ptr<RedisConnection> connection,
                                        std::vector<ReleaseCall> releases) {
  for (const ReleaseCall& call : releases) {
    const auto [command, target] = code_.release_command();
    const std::array<std::string_view, 6> arguments{command,  target,      "1",
                                                    call.key, call.permit, call.cost};
    RedisReply reply = co_await connection->command(arguments, options_.timeout);
    std::string why;
    if (!reply.error && reply.value.is_error() && code_missing(reply.value.text) &&
        co_await code_.load(*connection, options_.timeout, why)) {
      const auto [reloaded_command, reloaded_target] = code_.release_command();
      const std::array<std::string_view, 6> again{reloaded_command, reloaded_target, "1",
                                                  call.key,         call.permit,     call.cost};
      co_await connection->command(again, options_.timeout);
    }
  }
}

}  // namespace sluice::store::redis
