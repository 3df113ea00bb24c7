#include "proxy/store/redis/decision_batch.hpp"

namespace sluice::store::redis {

DecisionBatch::DecisionBatch(const io::Executor& executor) : answered_(executor) {
  answered_.expires_at(io::Timer::time_point::max());
}

void DecisionBatch::add(const KeyLayout& layout, BatchWaiter& waiter) {
  call_.add(layout, waiter.decision, waiter.charges, waiter.permit, waiter.now);
  waiters_.push_back(&waiter);
  parts_.push_back({.waiter = &waiter, .settled_charges = 0});
}

void DecisionBatch::add_settlement(const KeyLayout& layout, std::span<const Settlement> settled,
                                   std::uint64_t permit, std::int64_t decided_at,
                                   limiter::TimePoint now) {
  call_.add_settlement(layout, settled, permit, decided_at, now);
  parts_.push_back({.waiter = nullptr, .settled_charges = settled.size()});
}

void DecisionBatch::read(const RespValue& reply) {
  failure_.clear();
  settled_ = 0;
  if (reply.is_error()) {
    failure_ = reply.text;
    return;
  }
  const auto decided = decided_at(reply);
  if (!decided) {
    failure_ = "unexpected reply";
    return;
  }
  std::size_t at = decided->second;
  bool some_failed = false;
  for (const Part& part : parts_) {
    BatchWaiter* waiter = part.waiter;
    const DecisionReply read = waiter != nullptr
                                   ? read_decision(reply, at, waiter->charges, waiter->result)
                                   : read_settlement(reply, at, part.settled_charges);
    switch (read) {
      case DecisionReply::decided:
        if (waiter == nullptr) {
          ++settled_;
          break;
        }
        waiter->decided = true;
        waiter->decided_at = decided->first;
        break;
      case DecisionReply::failed:
        some_failed = true;
        break;
      case DecisionReply::malformed:
        failure_ = "unexpected reply";
        return;
    }
  }
  if (some_failed) {
    const std::string_view why = failure_of(reply, at);
    failure_ = why.empty() ? std::string_view("a request failed") : why;
  }
}

void DecisionBatch::wake() {
  answered_.cancel();
  waiters_.clear();
  parts_.clear();
  settled_ = 0;
  call_.clear();
  failure_.clear();
}

}  // namespace sluice::store::redis
