#include "proxy/store/redis/decision_batch.hpp"

namespace sluice::store::redis {

DecisionBatch::DecisionBatch(const io::Executor& executor) : answered_(executor) {
  answered_.expires_at(io::Timer::time_point::max());
}

void DecisionBatch::add(const KeyLayout& layout, BatchWaiter& waiter) {
  call_.add(layout, waiter.decision, waiter.charges, waiter.permit, waiter.now);
  waiters_.push_back(&waiter);
}

void DecisionBatch::read(const RespValue& reply) {
  failure_.clear();
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
  for (BatchWaiter* waiter : waiters_) {
    switch (read_decision(reply, at, waiter->charges, waiter->result)) {
      case DecisionReply::decided:
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
  call_.clear();
  failure_.clear();
}

}  // namespace sluice::store::redis
