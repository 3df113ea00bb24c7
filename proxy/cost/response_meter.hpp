#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/cost/cost_value.hpp"
#include "proxy/cost/event_stream.hpp"
#include "proxy/cost/json_path_reader.hpp"

namespace sluice::cost {

/// The usage formats a meter knows.
enum class Usage : std::uint8_t { openai, anthropic };
/// Which of a usage's counts is the cost.
enum class UsageCount : std::uint8_t { total, input, output };

/// Where a response's cost is read (a route's `cost_from`).
struct MeterSpec {
  enum class Kind : std::uint8_t { header, json, bytes, usage };
  Kind kind = Kind::usage;
  /// With `header`: a response header or trailer field's name, in any case.
  std::string header;
  /// With `json`: a dotted path, split ("usage.total_tokens" -> {"usage", "total_tokens"}).
  std::vector<std::string> path;
  /// With `usage`.
  Usage usage = Usage::openai;
  UsageCount count = UsageCount::total;
};

/// What the meter found when the response ended.
struct Reading {
  enum class Result : std::uint8_t { reported, missing, invalid };
  Result result = Result::missing;
  std::uint64_t cost = 0;  ///< With `reported`: 0..kMaxCost.
  std::string_view why;    ///< With `invalid`: a short static text for the log.

  bool operator==(const Reading&) const = default;
};

/// Reads what one response cost as it streams through the proxy, without holding its body: each
/// piece is lent to body() and then sent on (at most kCarryRoom bytes of an event cut by a
/// piece's end are copied). Its memory is fixed whatever the body's size. A meter is reused from
/// response to response: start() resets it and keeps its buffers, so a warm meter does not
/// allocate.
///
/// - `header`: the field's value in the head, replaced by a trailer of the same name if one
///   comes (the last of repeated fields counts).
/// - `bytes`: the body's bytes, up to kMaxCost.
/// - `json`: the number at the path in a JSON body or, in an event stream, in the last event
///   whose `data` is a JSON document that has it.
/// - `usage`: OpenAI's chat completions and responses, Anthropic's messages; whole bodies and
///   streams alike (see response_meter.cpp).
///
/// A value at a path that is not a whole number in 0..kMaxCost is invalid (a string, a bool, an
/// object, 1.5, -3); a JSON double counts when it is whole (12.0, 1e3). A null at a path means
/// "not here", as OpenAI's streams send `"usage": null` until the chunk that has it. A body that
/// is not JSON (a syntax error, text after the document, nesting beyond kMaxJsonDepth) is
/// invalid; one cut short counts the numbers it held whole. In an event stream, an event whose
/// data is not a JSON document (`[DONE]`) is skipped, and a stream is never invalid as a whole.
class ResponseMeter final : private EventStreamSink {
 public:
  /// The most of an event's data a meter holds to look at it whole when pieces cut it; a longer
  /// event is parsed as it streams.
  static constexpr std::size_t kCarryRoom = 4096;

  ResponseMeter() = default;
  ResponseMeter(const ResponseMeter&) = delete;
  ResponseMeter& operator=(const ResponseMeter&) = delete;

  /// A new response. `spec` must outlive it (it is the route's, which its generation keeps);
  /// `content_type` is the response's Content-Type: `text/event-stream`, in any case and with
  /// any parameters, is an event stream; anything else a JSON body.
  void start(const MeterSpec& spec, std::string_view content_type);
  /// Each field of the response's head.
  void field(std::string_view name, std::string_view value);
  /// Each piece of the body, in order.
  void body(std::span<const char> bytes);
  /// Each trailer field (HTTP/2's and gRPC's, chunked HTTP/1.1's).
  void trailer(std::string_view name, std::string_view value);
  /// The response ended, whole or cut short: what was seen of it. The meter then waits for the
  /// next start().
  Reading finish();
  /// What a `header` meter read from the response's head, before its body: the cost, if the
  /// head said a usable one. (A trailer of that name may still replace it.)
  std::optional<std::uint64_t> cost_in_head() const noexcept {
    return header_value_.state == CostValue::State::number ? std::optional(header_value_.number)
                                                           : std::nullopt;
  }

 private:
  enum class BodyKind : std::uint8_t { ignored, counted, json, event_stream };

  /// What becomes of the data of the event at hand.
  enum class EventData : std::uint8_t {
    parsed,   ///< Written to the parser as it comes.
    carried,  ///< Cut by a piece's end before it could be seen whole: held until it is.
  };

  std::size_t data_line(std::string_view ahead) override;
  void data(std::string_view run) override;
  void event_end() override;
  void carry(std::string_view run);
  bool carried_may_hold() const;
  void parse_carried();
  void take_event();
  Reading read_body_end();
  Reading usage_reading() const;

  const MeterSpec* spec_ = nullptr;
  BodyKind body_kind_ = BodyKind::ignored;
  CostValue header_value_;
  std::uint64_t body_bytes_ = 0;
  JsonPathReader json_;
  EventStreamReader events_;
  bool event_has_data_ = false;
  EventData event_data_ = EventData::parsed;
  std::span<const JsonTarget> targets_;
  std::string_view last_keys_ending_;
  JsonTarget path_target_;  ///< With `json`: the route's path.
  /// What the body said: a JSON body's values, or an event stream's latest.
  std::array<CostValue, kMaxJsonSlots> said_{};
  /// An event's data cut by a piece's end, up to kCarryRoom bytes: the only body bytes a meter
  /// holds, so its memory stays fixed (this, and the parser's kMaxJsonDepth stack).
  std::size_t carried_size_ = 0;
  /// How many of the carried bytes were looked at, when cut, and found without a backslash or
  /// the start of the targets' last keys' ending (look_at_line()).
  std::size_t carried_clear_ = 0;
  bool carried_lines_ = false;  ///< The carried data has more than one line.
  std::array<char, kCarryRoom> carried_;
};

}  // namespace sluice::cost
