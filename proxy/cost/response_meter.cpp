// Usage as the APIs report it (SPEC §9), read from whole JSON bodies and from event streams:
//
// - OpenAI chat completions: `usage.prompt_tokens` (input), `usage.completion_tokens` (output),
//   `usage.total_tokens`. Streamed, every chunk has `"usage": null` but one, after the last
//   choice, that has the usage (when the request asked for it: with_usage_requested()); then
//   `data: [DONE]`, which is not JSON.
// - OpenAI responses: `usage.input_tokens`, `usage.output_tokens`, `usage.total_tokens`;
//   streamed, in the `response.completed` (or `.incomplete`, `.failed`) event's
//   `response.usage`, the earlier events' `response.usage` being null.
// - Anthropic messages: `usage.input_tokens`, `usage.output_tokens`,
//   `usage.cache_creation_input_tokens`, `usage.cache_read_input_tokens`. Streamed, the
//   `message_start` event has them in `message.usage`, and each `message_delta` event in `usage`
//   the counts so far: cumulative, so each replaces the last, never adds to it.
//
// Every format's paths are read from every document, whatever its `type` or `event:` line says:
// only the events that carry usage have those paths, and a later event's count replaces an
// earlier one's.
#include "proxy/cost/response_meter.hpp"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SLUICE_AVX2_SCAN 1
#endif

namespace sluice::cost {
namespace {

/// OpenAI's slots.
constexpr std::uint8_t kInput = 0;
constexpr std::uint8_t kOutput = 1;
constexpr std::uint8_t kTotal = 2;
/// Anthropic's: its input and output, then the input it counts apart, read from or written to its
/// prompt cache.
constexpr std::uint8_t kCacheCreation = 2;
constexpr std::uint8_t kCacheRead = 3;

constexpr std::string_view kUsagePromptTokens[] = {"usage", "prompt_tokens"};
constexpr std::string_view kUsageCompletionTokens[] = {"usage", "completion_tokens"};
constexpr std::string_view kUsageInputTokens[] = {"usage", "input_tokens"};
constexpr std::string_view kUsageOutputTokens[] = {"usage", "output_tokens"};
constexpr std::string_view kUsageTotalTokens[] = {"usage", "total_tokens"};
constexpr std::string_view kUsageCacheCreation[] = {"usage", "cache_creation_input_tokens"};
constexpr std::string_view kUsageCacheRead[] = {"usage", "cache_read_input_tokens"};
constexpr std::string_view kResponseInputTokens[] = {"response", "usage", "input_tokens"};
constexpr std::string_view kResponseOutputTokens[] = {"response", "usage", "output_tokens"};
constexpr std::string_view kResponseTotalTokens[] = {"response", "usage", "total_tokens"};
constexpr std::string_view kMessageInputTokens[] = {"message", "usage", "input_tokens"};
constexpr std::string_view kMessageOutputTokens[] = {"message", "usage", "output_tokens"};
constexpr std::string_view kMessageCacheCreation[] = {"message", "usage",
                                                      "cache_creation_input_tokens"};
constexpr std::string_view kMessageCacheRead[] = {"message", "usage", "cache_read_input_tokens"};

constexpr JsonTarget kOpenAiTargets[] = {
    {kUsagePromptTokens, {}, kInput},   {kUsageInputTokens, {}, kInput},
    {kResponseInputTokens, {}, kInput}, {kUsageCompletionTokens, {}, kOutput},
    {kUsageOutputTokens, {}, kOutput},  {kResponseOutputTokens, {}, kOutput},
    {kUsageTotalTokens, {}, kTotal},    {kResponseTotalTokens, {}, kTotal}};
constexpr JsonTarget kAnthropicTargets[] = {
    {kUsageInputTokens, {}, kInput},           {kMessageInputTokens, {}, kInput},
    {kUsageOutputTokens, {}, kOutput},         {kMessageOutputTokens, {}, kOutput},
    {kUsageCacheCreation, {}, kCacheCreation}, {kMessageCacheCreation, {}, kCacheCreation},
    {kUsageCacheRead, {}, kCacheRead},         {kMessageCacheRead, {}, kCacheRead}};

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

/// `text/event-stream`, whatever its case, parameters and spaces.
bool is_event_stream(std::string_view content_type) {
  std::string_view media_type = content_type.substr(0, content_type.find(';'));
  const std::size_t first = media_type.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return false;
  }
  media_type = media_type.substr(first, media_type.find_last_not_of(" \t") - first + 1);
  return equal_ignoring_case(media_type, "text/event-stream");
}

Reading reading_of(const CostValue& value) {
  switch (value.state) {
    case CostValue::State::number:
      return {Reading::Result::reported, value.number, {}};
    case CostValue::State::invalid:
      return {Reading::Result::invalid, 0, value.why};
    case CostValue::State::absent:
      break;
  }
  return {};
}

/// A count that adds to another when the response has it, and adds nothing when it has not.
CostValue zero_if_absent(const CostValue& value) {
  return value.state == CostValue::State::absent ? CostValue::of(0) : value;
}

#if defined(SLUICE_AVX2_SCAN)
/// Whether the processor has AVX2: the build targets any x86-64, so it is asked at run time.
bool has_avx2() noexcept {
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}

/// look_at_line()'s scan 64 bytes at a time, where the processor has AVX2: from `p` while 64
/// bytes are left, calling `at_stop` at each line end, backslash and `first`; true when it
/// said stop (`p` is then unchanged), false with `p` past what it looked at. (No lambda inside:
/// it would not inherit the target.)
template <class AtStop>
__attribute__((target("avx2"))) bool scan_with_avx2(const char*& p, const char* end, char first,
                                                    AtStop& at_stop) {
  const __m256i lf = _mm256_set1_epi8('\n');
  const __m256i cr = _mm256_set1_epi8('\r');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i wanted = _mm256_set1_epi8(first);
  for (; end - p >= 64; p += 64) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    const auto low_stops = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(low, lf), _mm256_cmpeq_epi8(low, cr)),
        _mm256_or_si256(_mm256_cmpeq_epi8(low, backslash), _mm256_cmpeq_epi8(low, wanted)))));
    const auto high_stops = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(high, lf), _mm256_cmpeq_epi8(high, cr)),
        _mm256_or_si256(_mm256_cmpeq_epi8(high, backslash), _mm256_cmpeq_epi8(high, wanted)))));
    for (std::uint64_t stops = low_stops | std::uint64_t{high_stops} << 32; stops != 0;
         stops &= stops - 1) {
      if (at_stop(p + __builtin_ctzll(stops))) {
        return true;
      }
    }
  }
  return false;
}

/// first_possible_target()'s scan 32 bytes at a time: the first backslash, or the first place
/// where `first` then `second` stand and `ending_at` says the whole ending does; `end` when
/// none is before the last 32 bytes (which it leaves to the caller).
template <class EndingAt>
__attribute__((target("avx2"))) const char* scan_pairs_with_avx2(const char* p, const char* end,
                                                                 char first, char second,
                                                                 EndingAt& ending_at) {
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i firsts = _mm256_set1_epi8(first);
  const __m256i seconds = _mm256_set1_epi8(second);
  for (; end - p > 32; p += 32) {  // p + 1 .. p + 32 must be readable
    const __m256i here = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i next = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 1));
    const auto stops = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_cmpeq_epi8(here, backslash),
        _mm256_and_si256(_mm256_cmpeq_epi8(here, firsts), _mm256_cmpeq_epi8(next, seconds)))));
    for (std::uint32_t left = stops; left != 0; left &= left - 1) {
      const char* q = p + __builtin_ctz(left);
      if (*q == '\\' || ending_at(q)) {
        return q;
      }
    }
  }
  return end;
}
#endif

/// Where in `text` a target may first be: its first backslash, or the first `ending` (a
/// non-empty last_keys_ending()); else its size. One pass over a whole piece.
std::size_t first_possible_target(std::string_view text, std::string_view ending) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
#if defined(SLUICE_AVX2_SCAN)
  if (has_avx2() && ending.size() >= 2) {
    auto ending_at = [&](const char* q) {
      return static_cast<std::size_t>(end - q) >= ending.size() &&
             std::memcmp(q, ending.data(), ending.size()) == 0;
    };
    const char* p = scan_pairs_with_avx2(begin, end, ending[0], ending[1], ending_at);
    if (p != end) {
      return static_cast<std::size_t>(p - begin);
    }
    for (p = end - std::min<std::size_t>(text.size(), 32); p < end; ++p) {  // the last 32
      if (*p == '\\' || (*p == ending.front() && ending_at(p))) {
        return static_cast<std::size_t>(p - begin);
      }
    }
    return text.size();
  }
#endif
  std::size_t first = text.find('\\');
  const void* found = memmem(begin, text.size(), ending.data(), ending.size());
  if (found != nullptr) {
    first = std::min(first, static_cast<std::size_t>(static_cast<const char*>(found) - begin));
  }
  return std::min(first, text.size());
}

/// Where the last whole event of `text` before `limit` ends: just past its blank line's \n
/// (the second of a \n\n); 0 when none ends there.
std::size_t last_event_end(std::string_view text, std::size_t limit) {
  while (limit >= 2) {
    const void* found = memrchr(text.data(), '\n', limit);
    if (found == nullptr) {
      return 0;
    }
    const auto at = static_cast<std::size_t>(static_cast<const char*>(found) - text.data());
    if (at >= 1 && text[at - 1] == '\n') {
      return at + 1;
    }
    limit = at;
  }
  return 0;
}

/// What look_at_line() saw.
struct LineLook {
  std::size_t end = 0;    ///< Where the line ends: first_line_end().
  bool may_hold = false;  ///< Whether may_hold_target() could say true of the line.
};

/// The first line of `text`, in one pass: where it ends, and whether it has a backslash or
/// `ending` (last_keys_ending()). With neither it holds no target (see last_keys_only_null), so
/// most events are passed over without a second look. Data is most of a stream's bytes: 16 at a
/// time where SSE2 is.
LineLook look_at_line(std::string_view text, std::string_view ending) {
  LineLook look;
  if (ending.empty()) {
    look.may_hold = true;
    look.end = first_line_end(text);
    return look;
  }
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  const char* p = begin;
  // A stop: a line's end, a backslash, or where the ending may be.
  auto at_stop = [&](const char* q) {
    if (*q == '\n' || *q == '\r') {
      look.end = static_cast<std::size_t>(q - begin);
      return true;
    }
    if (*q == '\\' || (static_cast<std::size_t>(end - q) >= ending.size() &&
                       q[ending.size() - 1] == ending.back() &&
                       std::memcmp(q, ending.data(), ending.size()) == 0)) {
      look.may_hold = true;
      look.end = static_cast<std::size_t>(q - begin) +
                 first_line_end(std::string_view(q, static_cast<std::size_t>(end - q)));
      return true;
    }
    return false;
  };
#if defined(SLUICE_AVX2_SCAN)
  if (has_avx2() && scan_with_avx2(p, end, ending.front(), at_stop)) {
    return look;
  }
#endif
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i first = _mm_set1_epi8(ending.front());
  auto stops_in = [&](const char* q) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, lf), _mm_cmpeq_epi8(bytes, cr)),
        _mm_or_si128(_mm_cmpeq_epi8(bytes, backslash), _mm_cmpeq_epi8(bytes, first)))));
  };
  for (; end - p >= 32; p += 32) {
    for (std::uint32_t stops = stops_in(p) | stops_in(p + 16) << 16; stops != 0;
         stops &= stops - 1) {
      if (at_stop(p + __builtin_ctz(stops))) {
        return look;
      }
    }
  }
  if (end - p >= 16) {
    for (std::uint32_t stops = stops_in(p); stops != 0; stops &= stops - 1) {
      if (at_stop(p + __builtin_ctz(stops))) {
        return look;
      }
    }
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    if ((*p == '\n' || *p == '\r' || *p == '\\' || *p == ending.front()) && at_stop(p)) {
      return look;
    }
  }
  look.end = text.size();
  return look;
}

}  // namespace

void ResponseMeter::start(const MeterSpec& spec, std::string_view content_type) {
  spec_ = &spec;
  header_value_ = {};
  body_bytes_ = 0;
  said_ = {};
  event_has_data_ = false;
  event_data_ = EventData::parsed;
  carried_size_ = 0;
  carried_clear_ = 0;
  carried_lines_ = false;
  switch (spec.kind) {
    case MeterSpec::Kind::header:
      body_kind_ = BodyKind::ignored;
      return;
    case MeterSpec::Kind::bytes:
      body_kind_ = BodyKind::counted;
      return;
    case MeterSpec::Kind::json:
      path_target_ = JsonTarget{{}, spec.path, 0};
      targets_ = {&path_target_, 1};
      break;
    case MeterSpec::Kind::usage:
      if (spec.usage == Usage::openai) {
        targets_ = kOpenAiTargets;
      } else {
        targets_ = kAnthropicTargets;
      }
      break;
  }
  json_.set_targets(targets_);
  last_keys_ending_ = last_keys_ending(targets_);
  if (is_event_stream(content_type)) {
    body_kind_ = BodyKind::event_stream;
    events_.start();
  } else {
    body_kind_ = BodyKind::json;
    json_.start();
  }
}

void ResponseMeter::field(std::string_view name, std::string_view value) {
  if (spec_ != nullptr && spec_->kind == MeterSpec::Kind::header &&
      equal_ignoring_case(name, spec_->header)) {
    header_value_ = read_cost_text(value);
  }
}

void ResponseMeter::trailer(std::string_view name, std::string_view value) {
  field(name, value);  // a trailer comes after the head: it replaces the head's value
}

void ResponseMeter::body(std::span<const char> bytes) {
  switch (body_kind_) {
    case BodyKind::ignored:
      return;
    case BodyKind::counted:
      body_bytes_ = bytes.size() >= kMaxCost - body_bytes_ ? kMaxCost : body_bytes_ + bytes.size();
      return;
    case BodyKind::json:
      json_.write(std::string_view(bytes.data(), bytes.size()));
      return;
    case BodyKind::event_stream:
      events_.write(bytes, *this);
      return;
  }
}

// Most events of a stream hold no usage (OpenAI's chunks say `"usage": null`), and parsing each
// costs far more than relaying it. An event's data is looked at whole first, and not parsed when
// it cannot hold a target: what it would have given is nothing, whether or not it is JSON. When
// its one data line ends, with the event, in the piece at hand, it is looked at there and the
// reader is told to go past it; when a piece's end cuts it (reads often return no more than a TCP
// segment), it is carried to the event's end, up to kCarryRoom bytes. Longer data is parsed as it
// comes.
std::size_t ResponseMeter::data_line(std::string_view ahead) {
  if (event_has_data_) {
    if (event_data_ == EventData::parsed) {
      json_.write("\n");  // an event's data lines are joined by newlines: whitespace to JSON
    } else {
      carried_lines_ = true;
      carry("\n");
    }
    return 0;
  }
  const std::size_t space = !ahead.empty() && ahead.front() == ' ' ? 1 : 0;
  ahead.remove_prefix(space);
  const LineLook look = look_at_line(ahead, last_keys_ending_);
  const bool whole_event =
      look.end + 1 < ahead.size() && ahead[look.end] == '\n' && ahead[look.end + 1] == '\n';
  if (whole_event && (!look.may_hold ||
                      !may_hold_target(ahead.substr(0, look.end), targets_, last_keys_ending_))) {
    // The event holds nothing: the reader goes past it, and past the whole events after it
    // that hold neither a backslash nor the ending anywhere, which hold nothing either. One
    // pass over the rest of the piece rather than a look per event: an OpenAI chat stream's
    // chunks (`"usage":null`) are passed over so, up to the one the piece's end cuts.
    const std::string_view rest = ahead.substr(look.end + 2);
    return space + look.end + 2 +
           (last_keys_ending_.empty()
                ? 0
                : last_event_end(rest, first_possible_target(rest, last_keys_ending_)));
  }
  event_has_data_ = true;
  if (whole_event || look.end > kCarryRoom) {
    event_data_ = EventData::parsed;
    json_.start();
    return 0;
  }
  event_data_ = EventData::carried;  // the event goes on past this line or this piece
  carried_size_ = 0;
  carried_clear_ = 0;
  carried_lines_ = false;
  if (look.end == ahead.size() && !ahead.empty()) {
    carry(ahead);  // the line runs past the piece: taken here rather than run by run
    carried_clear_ = look.may_hold ? 0 : ahead.size();
    return space + ahead.size();
  }
  return 0;
}

void ResponseMeter::data(std::string_view run) {
  switch (event_data_) {
    case EventData::parsed:
      json_.write(run);
      return;
    case EventData::carried:
      carry(run);
      return;
  }
}

void ResponseMeter::carry(std::string_view run) {
  if (run.size() <= carried_.size() - carried_size_) {
    std::memcpy(carried_.data() + carried_size_, run.data(), run.size());
    carried_size_ += run.size();
    return;
  }
  parse_carried();  // too long to hold: parsed from here on as it comes
  json_.write(run);
}

bool ResponseMeter::carried_may_hold() const {
  if (carried_lines_) {
    return true;  // look_at_line() would stop at the first line's end
  }
  // What was looked at when cut need not be again, but for an ending that may start in its last
  // bytes and go on past them.
  const std::size_t overlap = last_keys_ending_.empty() ? 0 : last_keys_ending_.size() - 1;
  const std::size_t from = carried_clear_ > overlap ? carried_clear_ - overlap : 0;
  return look_at_line(std::string_view(carried_.data() + from, carried_size_ - from),
                      last_keys_ending_)
      .may_hold;
}

void ResponseMeter::parse_carried() {
  event_data_ = EventData::parsed;
  json_.start();
  json_.write(std::string_view(carried_.data(), carried_size_));
}

void ResponseMeter::event_end() {
  if (!event_has_data_) {
    return;
  }
  const std::string_view carried(carried_.data(), carried_size_);
  if (event_data_ == EventData::parsed) {
    take_event();
  } else if (carried_may_hold() && may_hold_target(carried, targets_, last_keys_ending_)) {
    parse_carried();
    take_event();
  }
  event_has_data_ = false;
  event_data_ = EventData::parsed;
}

void ResponseMeter::take_event() {
  if (json_.end() != JsonPathReader::Status::complete) {
    return;  // not a JSON document: `[DONE]`, or an event cut short
  }
  for (std::size_t slot = 0; slot < said_.size(); ++slot) {
    if (json_.found(slot).state != CostValue::State::absent) {
      said_[slot] = json_.found(slot);
    }
  }
}

Reading ResponseMeter::finish() {
  if (spec_ == nullptr) {
    return {};
  }
  const Reading reading = read_body_end();
  spec_ = nullptr;
  body_kind_ = BodyKind::ignored;
  return reading;
}

Reading ResponseMeter::read_body_end() {
  if (body_kind_ == BodyKind::event_stream && event_has_data_) {
    // A stream cut short may end without the event's blank line: what it has is parsed.
    if (event_data_ == EventData::carried) {
      parse_carried();
    }
    take_event();
  }
  if (body_kind_ == BodyKind::json) {
    if (json_.end() == JsonPathReader::Status::failed) {
      return {Reading::Result::invalid, 0, json_.failure()};
    }
    for (std::size_t slot = 0; slot < said_.size(); ++slot) {
      said_[slot] = json_.found(slot);
    }
  }
  switch (spec_->kind) {
    case MeterSpec::Kind::header:
      return reading_of(header_value_);
    case MeterSpec::Kind::bytes:
      return {Reading::Result::reported, body_bytes_, {}};
    case MeterSpec::Kind::json:
      return reading_of(said_[0]);
    case MeterSpec::Kind::usage:
      break;
  }
  return usage_reading();
}

Reading ResponseMeter::usage_reading() const {
  CostValue input;
  CostValue output;
  CostValue total;
  if (spec_->usage == Usage::openai) {
    input = said_[kInput];
    output = said_[kOutput];
    // Embeddings report no output: their total is their input, as the API gives it.
    total =
        said_[kTotal].state != CostValue::State::absent ? said_[kTotal] : add_costs(input, output);
  } else {
    // Anthropic counts apart the input it wrote to or read from its prompt cache: the call read
    // all of it, so all of it is input.
    input = add_costs(add_costs(said_[kInput], zero_if_absent(said_[kCacheCreation])),
                      zero_if_absent(said_[kCacheRead]));
    output = said_[kOutput];
    total = add_costs(input, output);
  }
  switch (spec_->count) {
    case UsageCount::input:
      return reading_of(input);
    case UsageCount::output:
      return reading_of(output);
    case UsageCount::total:
      break;
  }
  return reading_of(total);
}

}  // namespace sluice::cost
