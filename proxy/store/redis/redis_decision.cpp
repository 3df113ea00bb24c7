#include "proxy/store/redis/redis_decision.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <charconv>
#include <type_traits>

#include "limiter/calendar.hpp"
#include "limiter/key_hash.hpp"
#include "proxy/store/redis/cluster_slots.hpp"

namespace sluice::store::redis {
namespace {

using limiter::AlgorithmKind;
using limiter::LimiterOptions;

/// Reply values per limiter (decide.lua's VALUES).
constexpr std::size_t kReplyValues = 5;

/// decide.lua's index of an algorithm in its `algorithms` table.
int script_algorithm(const LimiterOptions& options) noexcept {
  switch (options.algorithm) {
    case AlgorithmKind::fixed_window:
      return 1;
    case AlgorithmKind::sliding_log:
      return 2;
    case AlgorithmKind::sliding_window:
      return 3;
    case AlgorithmKind::wheel:
      return 4;
    case AlgorithmKind::token_bucket:
      return options.warmup > limiter::Duration::zero() ? 6 : 5;
    case AlgorithmKind::leaky_bucket:
      return 7;
    case AlgorithmKind::concurrency:
      return 8;
  }
  return 0;
}

double microseconds(limiter::Duration duration) noexcept {
  return static_cast<double>(duration.count()) / 1000.0;
}

/// The four parameters decide.lua's algorithm reads, in its order. A calendar window's are its
/// limit, the length of the period before (negative, as the mark of a calendar window) and the
/// bounds (µs) of the period that holds `at`: the time zone database is the proxy's, so the
/// proxy tells Redis where this month (day, week, year) and the one before start and end.
std::array<double, 4> script_parameters(const LimiterOptions& o, limiter::TimePoint at) noexcept {
  const auto limit = static_cast<double>(o.limit);
  const double period = microseconds(o.rate.period);
  switch (o.algorithm) {
    case AlgorithmKind::fixed_window:
      if (o.calendar != limiter::Calendar::none) {
        const limiter::CalendarPeriods periods(o.calendar, o.time_zone);
        const std::int64_t index = periods.index(at);
        const limiter::TimePoint start = periods.start(index);
        return {limit, -microseconds(start - periods.start(index - 1)),
                microseconds(start.time_since_epoch()),
                microseconds(periods.start(index + 1).time_since_epoch())};
      }
      return {limit, microseconds(o.window), 0, 0};
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
      return {limit, microseconds(o.window), 0, 0};
    case AlgorithmKind::wheel:
      return {limit, microseconds(o.window), static_cast<double>(o.slots), 0};
    case AlgorithmKind::token_bucket:
      if (o.warmup > limiter::Duration::zero()) {
        return {o.rate.permits, period, microseconds(o.warmup), o.cold_factor};
      }
      return {o.rate.permits, period, o.burst.value_or(std::max(1.0, o.rate.per_second())), 0};
    case AlgorithmKind::leaky_bucket:
      return {o.rate.permits, period, o.burst.value_or(0), 0};
    case AlgorithmKind::concurrency:
      return {limit, microseconds(kConcurrencyLease), 0, 0};
  }
  return {};
}

/// Hashes what shapes a key's stored state (not mode or max_delay: they only read it). A
/// calendar window's bounds change every period; its unit and time zone are hashed instead.
std::uint32_t definition_hash(const LimiterOptions& o) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325;  // FNV-1a over 64-bit words
  const auto mix = [&hash](std::uint64_t word) { hash = (hash ^ word) * 0x100000001b3; };
  mix(static_cast<std::uint64_t>(script_algorithm(o)));
  const bool calendar =
      o.algorithm == AlgorithmKind::fixed_window && o.calendar != limiter::Calendar::none;
  const std::array<double, 4> parameters =
      calendar ? std::array<double, 4>{static_cast<double>(o.limit), 0, 0, 0}
               : script_parameters(o, limiter::TimePoint{});
  if (calendar) {
    mix(static_cast<std::uint64_t>(o.calendar));
    for (const char c : o.time_zone != nullptr ? o.time_zone->name() : std::string_view("UTC")) {
      mix(static_cast<unsigned char>(c));
    }
  }
  for (const double parameter : parameters) {
    mix(std::bit_cast<std::uint64_t>(parameter));
  }
  return static_cast<std::uint32_t>(hash ^ (hash >> 32));
}

/// Appends a number as text: integers in `base`, doubles in their shortest exact form (which
/// Lua's tonumber reads back exactly). std::to_chars: no locale, no allocation.
template <class Number>
void append_number(std::string& out, Number value, int base = 10) {
  std::array<char, 32> text;
  std::to_chars_result end{};
  if constexpr (std::is_floating_point_v<Number>) {
    end = std::to_chars(text.data(), text.data() + text.size(), value);
  } else {
    end = std::to_chars(text.data(), text.data() + text.size(), value, base);
  }
  out.append(text.data(), end.ptr);
}

/// Appends `value` in hexadecimal, zero-padded to `digits`.
void append_hex(std::string& out, std::uint64_t value, std::size_t digits) {
  std::array<char, 16> text;
  const auto end = std::to_chars(text.data(), text.data() + text.size(), value, 16).ptr;
  const auto length = static_cast<std::size_t>(end - text.data());
  out.append(digits > length ? digits - length : 0, '0');
  out.append(text.data(), length);
}

limiter::Duration from_microseconds(long long us) noexcept {
  // Negative, or longer than nanoseconds can count (292 years): never.
  if (us < 0 || us > limiter::Duration::max().count() / 1000) {
    return limiter::Duration::max();
  }
  return std::chrono::microseconds(us);
}

/// Appends the 7 values of a definition that decide.lua reads (algorithm, delay, max_delay, 4
/// parameters, a calendar window's those of `at`), calling `end_value` after each.
template <class EndValue>
void append_definition(std::string& text, const LimiterOptions& options, limiter::TimePoint at,
                       EndValue end_value) {
  append_number(text, script_algorithm(options));
  end_value();
  text += options.policy.mode == limiter::Mode::delay ? '1' : '0';
  end_value();
  append_number(text, microseconds(options.policy.max_delay));
  end_value();
  for (const double parameter : script_parameters(options, at)) {
    append_number(text, parameter);
    end_value();
  }
}

/// What a charge's commit took: its cost, or for one settled after the response, its reserve.
limiter::Permits committed(const limiter::Charge& charge) noexcept {
  return charge.settled_later ? charge.reserve : charge.cost;
}

long long whole_microseconds(limiter::Duration duration) noexcept {
  return std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
}

long long epoch_microseconds(std::optional<limiter::TimePoint> now) noexcept {
  return now ? whole_microseconds(now->time_since_epoch()) : 0;
}

}  // namespace

void append_redis_key(std::string& out, const KeyLayout& layout, std::string_view limiter_name,
                      const LimiterOptions& options, limiter::KeyHash key) {
  if (layout.cluster) {
    out += layout.prefix;
  } else {
    out += '{';
    out += layout.prefix;
    out += '}';
  }
  out += limiter_name;
  out += ':';
  append_hex(out, definition_hash(options), 8);
  out += ':';
  if (layout.cluster) {
    out += '{';
    append_hex(out, key, 16);
    out += '}';
  } else {
    append_hex(out, key, 16);
  }
}

std::uint16_t cluster_slot(limiter::KeyHash key) noexcept {
  std::array<char, 16> hex;
  const auto end = std::to_chars(hex.data(), hex.data() + hex.size(), key, 16).ptr;
  const auto length = static_cast<std::size_t>(end - hex.data());
  std::array<char, 16> padded;
  std::fill_n(padded.begin(), 16 - length, '0');
  std::copy(hex.data(), end, padded.begin() + static_cast<std::ptrdiff_t>(16 - length));
  return key_slot({padded.data(), padded.size()});
}

std::uint64_t redis_key_id(std::string_view limiter_name, const LimiterOptions& options,
                           limiter::KeyHash key) noexcept {
  return limiter::hash_key(limiter_name, key ^ (std::uint64_t{definition_hash(options)} << 32));
}

void BatchCall::Words::view_into(std::vector<std::string_view>& out) const {
  std::size_t begin = 0;
  for (const std::size_t end : ends) {
    out.emplace_back(text.data() + begin, end - begin);
    begin = end;
  }
}

void BatchCall::clear() {
  for (Words* words : {&keys_, &definitions_, &values_}) {
    words->text.clear();
    words->ends.clear();
  }
  defined_.clear();
  requests_ = 0;
}

std::size_t BatchCall::definition(const LimiterOptions& options, limiter::TimePoint now) {
  const auto known = std::find(defined_.begin(), defined_.end(), &options);
  if (known != defined_.end()) {
    return static_cast<std::size_t>(known - defined_.begin()) + 1;
  }
  defined_.push_back(&options);
  append_definition(definitions_.text, options, now, [this] { definitions_.end(); });
  return defined_.size();
}

void BatchCall::add(const KeyLayout& layout, const pipeline::Decision& decision,
                    const pipeline::Charges& charges, std::uint64_t permit,
                    limiter::TimePoint now) {
  ++requests_;
  for (std::size_t i = 0; i < charges.count; ++i) {
    const config::LimiterConfig& limiter = *decision.reports[charges.report[i]].limiter;
    append_redis_key(keys_.text, layout, limiter.name, *charges.options[i], charges.shared_key[i]);
    keys_.end();
  }
  append_number(values_.text, charges.count);
  values_.end();
  append_number(values_.text, charges.live);
  values_.end();
  append_number(values_.text, permit, 16);
  values_.end();
  for (std::size_t i = 0; i < charges.count; ++i) {
    const limiter::Charge& charge = charges.items[i];
    append_number(values_.text, definition(*charges.options[i], now));
    values_.end();
    // A charge settled after the response reserves its whole cost at admission, or nothing
    // (Pipeline::prepare); nothing is told by the cost negated: decide.lua then admits it if
    // the cost fits, and commits none of it.
    assert(!charge.settled_later || charge.reserve == 0 || charge.reserve == charge.cost);
    const bool reserves_nothing = charge.settled_later && charge.reserve == 0;
    append_number(values_.text, reserves_nothing ? -static_cast<long long>(charge.cost)
                                                 : static_cast<long long>(charge.cost));
    values_.end();
  }
}

void BatchCall::add_settlement(const KeyLayout& layout, std::span<const Settlement> settled,
                               std::uint64_t permit, std::int64_t decided_at,
                               limiter::TimePoint now) {
  ++requests_;
  for (const Settlement& s : settled) {
    append_redis_key(keys_.text, layout, s.limiter->name, *s.options, s.shared_key);
    keys_.end();
  }
  append_number(values_.text, settled.size());
  values_.end();
  values_.text += "-1";  // live limiters: -1 marks a settlement
  values_.end();
  append_number(values_.text, permit, 16);
  values_.end();
  append_number(values_.text, decided_at);
  values_.end();
  for (const Settlement& s : settled) {
    append_definition(definitions_.text, *s.options, now, [this] { definitions_.end(); });
    defined_.push_back(nullptr);  // counted, never found again
    append_number(values_.text, defined_.size());
    values_.end();
    append_number(values_.text, s.amount);
    values_.end();
  }
}

void BatchCall::add_renewal(std::string_view redis_key, const LimiterOptions& options,
                            limiter::Permits amount, std::uint64_t permit, limiter::TimePoint now) {
  ++requests_;
  keys_.text += redis_key;
  keys_.end();
  values_.text += "1";  // one charge
  values_.end();
  values_.text += "1";  // live
  values_.end();
  append_number(values_.text, permit, 16);
  values_.end();
  append_definition(definitions_.text, options, now, [this] { definitions_.end(); });
  defined_.push_back(nullptr);  // counted, never found again
  append_number(values_.text, defined_.size());
  values_.end();
  append_number(values_.text, amount);
  values_.end();
}

std::span<const std::string_view> BatchCall::arguments(std::string_view command,
                                                       std::string_view target,
                                                       std::optional<limiter::TimePoint> now,
                                                       bool keys_as_arguments) {
  head_.text.clear();
  head_.ends.clear();
  append_number(head_.text, keys_.ends.size());
  head_.end();
  append_number(head_.text, epoch_microseconds(now));
  head_.end();
  append_number(head_.text, requests_);
  head_.end();
  append_number(head_.text, defined_.size());
  head_.end();
  // Views last, once no text grows any more.
  arguments_.clear();
  arguments_.push_back(command);
  arguments_.push_back(target);
  if (keys_as_arguments) {
    arguments_.emplace_back("0");  // then the key count, as decide_in_cluster reads it
  }
  const std::size_t first = arguments_.size();
  head_.view_into(arguments_);  // numkeys, now, requests, definitions
  const std::array<std::string_view, 3> after_keys{arguments_[first + 1], arguments_[first + 2],
                                                   arguments_[first + 3]};
  arguments_.resize(first + 1);
  keys_.view_into(arguments_);
  arguments_.insert(arguments_.end(), after_keys.begin(), after_keys.end());
  definitions_.view_into(arguments_);
  values_.view_into(arguments_);
  return arguments_;
}

std::optional<std::pair<std::int64_t, std::size_t>> decided_at(const RespValue& reply) noexcept {
  if (reply.kind != RespValue::Kind::array || reply.elements.empty() ||
      reply.elements[0].kind != RespValue::Kind::integer) {
    return std::nullopt;
  }
  return std::pair{std::int64_t{reply.elements[0].integer}, std::size_t{1}};
}

DecisionReply read_decision(const RespValue& reply, std::size_t& at,
                            const pipeline::Charges& charges, pipeline::ChargeResult& result) {
  const std::size_t end = at + 1 + kReplyValues * charges.count;
  if (reply.kind != RespValue::Kind::array || reply.elements.size() < end) {
    return DecisionReply::malformed;
  }
  for (std::size_t i = at; i < end; ++i) {
    if (reply.elements[i].kind != RespValue::Kind::integer) {
      return DecisionReply::malformed;
    }
  }
  const long long status = reply.elements[at].integer;
  if (status != 0 && status != 1) {
    return DecisionReply::malformed;
  }
  const RespValue* values = &reply.elements[at + 1];
  at = end;
  if (status == 0) {
    return DecisionReply::failed;
  }
  result.live_admitted = true;
  result.shadow_admitted = charges.count > charges.live;
  for (std::size_t i = 0; i < charges.count; ++i, values += kReplyValues) {
    limiter::Outcome& outcome = result.outcomes[i];
    outcome.verdict = {.admitted = values[0].integer == 1,
                       .hold = from_microseconds(values[1].integer),
                       .retry_after = from_microseconds(values[2].integer)};
    outcome.status = {.remaining = static_cast<std::uint64_t>(std::max(values[3].integer, 0LL)),
                      .reset = from_microseconds(values[4].integer)};
    if (!outcome.verdict.admitted) {
      (i < charges.live ? result.live_admitted : result.shadow_admitted) = false;
    }
  }
  // Shadow limiters of a refused request are not evaluated.
  if (!result.live_admitted) {
    result.shadow_admitted = false;
  }
  return DecisionReply::decided;
}

DecisionReply read_settlement(const RespValue& reply, std::size_t& at, std::size_t count) {
  const std::size_t end = at + 1 + kReplyValues * count;
  if (reply.kind != RespValue::Kind::array || reply.elements.size() < end ||
      std::any_of(reply.elements.begin() + static_cast<std::ptrdiff_t>(at),
                  reply.elements.begin() + static_cast<std::ptrdiff_t>(end),
                  [](const RespValue& v) { return v.kind != RespValue::Kind::integer; })) {
    return DecisionReply::malformed;
  }
  const long long status = reply.elements[at].integer;
  if (status != 0 && status != 1) {
    return DecisionReply::malformed;
  }
  at = end;
  return status == 1 ? DecisionReply::decided : DecisionReply::failed;
}

std::string_view failure_of(const RespValue& reply, std::size_t at) noexcept {
  if (reply.kind != RespValue::Kind::array || at >= reply.elements.size() ||
      reply.elements[at].kind != RespValue::Kind::bulk) {
    return {};
  }
  return reply.elements[at].text;
}

ReleaseCall release_call(const KeyLayout& layout, const pipeline::Permit& permit,
                         std::uint64_t id) {
  ReleaseCall call;
  append_redis_key(call.key, layout, permit.config->name, *permit.options, permit.shared_key);
  append_number(call.permit, id, 16);
  append_number(call.cost, permit.cost);
  return call;
}

std::vector<std::string> refund_command(std::string_view target, std::span<const RefundItem> items,
                                        std::uint64_t permit, std::int64_t decided_at,
                                        std::optional<limiter::TimePoint> now) {
  std::vector<std::string> command{"FCALL", std::string(target), "0"};
  const auto number = [&command](auto value, int base = 10) {
    append_number(command.emplace_back(), value, base);
  };
  number(epoch_microseconds(now));
  number(decided_at);
  number(permit, 16);
  number(items.size());
  for (const RefundItem& item : items) {
    command.emplace_back(item.key);
  }
  for (const RefundItem& item : items) {
    std::string definition;
    std::vector<std::size_t> ends;
    // A calendar window's bounds: those of the period it was charged in.
    append_definition(definition, *item.options,
                      limiter::TimePoint(std::chrono::microseconds(decided_at)),
                      [&] { ends.push_back(definition.size()); });
    std::size_t begin = 0;
    for (const std::size_t end : ends) {
      command.push_back(definition.substr(begin, end - begin));
      begin = end;
    }
    number(item.cost);
    number(whole_microseconds(item.hold));
  }
  return command;
}

RefundCall refund_call(std::string_view target, const KeyLayout& layout,
                       const pipeline::Decision& decision, const pipeline::Charges& charges,
                       const pipeline::ChargeResult& decided, bool live, bool shadow,
                       std::uint64_t permit, std::int64_t decided_at,
                       std::optional<limiter::TimePoint> now) {
  RefundCall call;
  for (std::size_t i = 0; i < charges.count; ++i) {
    const bool is_live = i < charges.live;
    if ((is_live ? (live && decided.live_admitted) : (shadow && decided.shadow_admitted)) &&
        committed(charges.items[i]) != 0) {
      call.charges.push_back(i);
    }
  }
  if (call.charges.empty()) {
    return call;
  }
  std::vector<std::string> keys;
  std::vector<RefundItem> items;
  keys.reserve(call.charges.size());
  for (const std::size_t i : call.charges) {
    append_redis_key(keys.emplace_back(), layout, decision.reports[charges.report[i]].limiter->name,
                     *charges.options[i], charges.shared_key[i]);
    items.push_back({keys.back(), charges.options[i], committed(charges.items[i]),
                     decided.outcomes[i].verdict.hold});
  }
  call.command = refund_command(target, items, permit, decided_at, now);
  return call;
}

bool read_refund(const RespValue& reply, const RefundCall& call, pipeline::ChargeResult& result) {
  if (reply.kind != RespValue::Kind::array || reply.elements.size() != 2 * call.charges.size() ||
      std::any_of(reply.elements.begin(), reply.elements.end(),
                  [](const RespValue& v) { return v.kind != RespValue::Kind::integer; })) {
    return false;
  }
  for (std::size_t k = 0; k < call.charges.size(); ++k) {
    result.outcomes[call.charges[k]].status = {
        .remaining = static_cast<std::uint64_t>(std::max(reply.elements[2 * k].integer, 0LL)),
        .reset = from_microseconds(reply.elements[2 * k + 1].integer)};
  }
  return true;
}

}  // namespace sluice::store::redis
