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
  ++settlements_;
}

void DecisionBatch::add_renewal(const LeaseRenewal& renewal, std::string_view redis_key,
                                const limiter::LimiterOptions& options, limiter::TimePoint now) {
  call_.add_renewal(redis_key, options, renewal.amount, renewal.permit, now);
  renewals_.push_back(renewal);
  renewals_.back().admitted = false;
  parts_.push_back({.renewal = renewals_.size()});
}

DecisionReply DecisionBatch::read_renewal(const RespValue& reply, std::size_t& at,
                                          LeaseRenewal& renewal, std::int64_t decided_at) {
  static const pipeline::Charges kOneLiveCharge = [] {
    pipeline::Charges charges;
    charges.count = 1;
    charges.live = 1;
    return charges;
  }();
  pipeline::ChargeResult answer;
  const DecisionReply read = read_decision(reply, at, kOneLiveCharge, answer);
  if (read == DecisionReply::decided) {
    renewal.admitted = answer.live_admitted;
    renewal.status = answer.outcomes[0].status;
    renewal.decided_at = decided_at;
  }
  return read;
}

void DecisionBatch::read(const RespValue& reply) {
  failure_.clear();
  settled_ = 0;
  for (LeaseRenewal& renewal : renewals_) {
    renewal.admitted = false;  // until this reply says so
  }
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
    DecisionReply read = DecisionReply::malformed;
    if (waiter != nullptr) {
      read = read_decision(reply, at, waiter->charges, waiter->result);
      if (read == DecisionReply::decided) {
        waiter->decided = true;
        waiter->decided_at = decided->first;
      }
    } else if (part.renewal != 0) {
      read = read_renewal(reply, at, renewals_[part.renewal - 1], decided->first);
    } else {
      read = read_settlement(reply, at, part.settled_charges);
      settled_ += read == DecisionReply::decided ? 1 : 0;
    }
    if (read == DecisionReply::failed) {
      some_failed = true;
    } else if (read == DecisionReply::malformed) {
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
  renewals_.clear();
  settlements_ = 0;
  settled_ = 0;
  call_.clear();
  failure_.clear();
}

}  // namespace sluice::store::redis
