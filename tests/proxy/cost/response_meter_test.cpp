#include "proxy/cost/response_meter.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/support/counted_new.hpp"

namespace sluice::cost {
namespace {

// Responses as the APIs send them (their documented examples, with counts of their own so that
// each count is told apart from the others).

constexpr std::string_view kOpenAiChatJson = R"({
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk through a lush green meadow.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}
)";

/// A streamed chat completion with `stream_options.include_usage`: `"usage": null` on every
/// chunk, then a chunk without choices that has it, then `[DONE]`.
constexpr std::string_view kOpenAiChatStream =
    R"(data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":" there!"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

)";

constexpr std::string_view kOpenAiResponseJson = R"({
  "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
  "object": "response",
  "created_at": 1741476542,
  "status": "completed",
  "error": null,
  "incomplete_details": null,
  "instructions": null,
  "max_output_tokens": null,
  "model": "gpt-4.1-2025-04-14",
  "output": [
    {
      "type": "message",
      "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
      "status": "completed",
      "role": "assistant",
      "content": [
        {"type": "output_text", "text": "In a peaceful grove beneath a silver moon...", "annotations": []}
      ]
    }
  ],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "reasoning": {"effort": null, "summary": null},
  "store": true,
  "temperature": 1.0,
  "text": {"format": {"type": "text"}},
  "tool_choice": "auto",
  "tools": [],
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 123
  },
  "user": null,
  "metadata": {}
})";

/// The responses API streamed: its usage comes in `response.completed`, earlier events having
/// `"usage": null` in their `response`.
constexpr std::string_view kOpenAiResponseStream =
    R"(event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"model":"gpt-4.1-2025-04-14","output":[],"temperature":1.0,"usage":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","status":"in_progress","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi"}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":5,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"text":"Hi there! How can I assist you today?"}

event: response.completed
data: {"type":"response.completed","sequence_number":7,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"completed","error":null,"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there! How can I assist you today?","annotations":[]}]}],"temperature":1.0,"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48},"metadata":{}}}

)";

constexpr std::string_view kAnthropicJson = R"({
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-20250514",
  "content": [{"type": "text", "text": "Hello! How can I help you today?"}],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 2095,
    "cache_creation_input_tokens": 120,
    "cache_read_input_tokens": 1800,
    "cache_creation": {"ephemeral_5m_input_tokens": 120, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 503,
    "service_tier": "standard"
  }
})";

/// Anthropic's stream: the input in `message_start`, then cumulative output counts in each
/// `message_delta`.
constexpr std::string_view kAnthropicStream =
    R"(event: message_start
data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-opus-4-1-20250805", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": null, "stop_sequence": null}, "usage": {"output_tokens": 9}}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}

event: message_stop
data: {"type": "message_stop"}

)";

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kEventStream = "text/event-stream";

MeterSpec usage_spec(Usage usage, UsageCount count) {
  MeterSpec spec;
  spec.kind = MeterSpec::Kind::usage;
  spec.usage = usage;
  spec.count = count;
  return spec;
}

MeterSpec json_spec(std::vector<std::string> path) {
  MeterSpec spec;
  spec.kind = MeterSpec::Kind::json;
  spec.path = std::move(path);
  return spec;
}

MeterSpec header_spec(std::string name) {
  MeterSpec spec;
  spec.kind = MeterSpec::Kind::header;
  spec.header = std::move(name);
  return spec;
}

std::string describe(const Reading& reading) {
  switch (reading.result) {
    case Reading::Result::reported:
      return "reported " + std::to_string(reading.cost);
    case Reading::Result::invalid:
      return "invalid: " + std::string(reading.why);
    case Reading::Result::missing:
      break;
  }
  return "missing";
}

std::span<const char> bytes_of(std::string_view text) { return {text.data(), text.size()}; }

/// The reading of a body given in these pieces, through `meter`.
std::string meter_pieces(ResponseMeter& meter, const MeterSpec& spec, std::string_view content_type,
                         const std::vector<std::string_view>& pieces) {
  meter.start(spec, content_type);
  for (const std::string_view piece : pieces) {
    meter.body(bytes_of(piece));
  }
  return describe(meter.finish());
}

std::string meter_whole(const MeterSpec& spec, std::string_view content_type,
                        std::string_view body) {
  ResponseMeter meter;
  return meter_pieces(meter, spec, content_type, {body});
}

/// Expects `body` to read `expected` whole, a byte at a time, and cut in two at every place,
/// through one meter reused all along.
void expect_in_any_pieces(const MeterSpec& spec, std::string_view content_type,
                          std::string_view body, const std::string& expected) {
  ResponseMeter meter;
  EXPECT_EQ(meter_pieces(meter, spec, content_type, {body}), expected) << "whole";
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < body.size(); ++i) {
    bytes.push_back(body.substr(i, 1));
  }
  EXPECT_EQ(meter_pieces(meter, spec, content_type, bytes), expected) << "a byte at a time";
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    const std::string reading =
        meter_pieces(meter, spec, content_type, {body.substr(0, cut), body.substr(cut)});
    if (reading != expected) {
      ADD_FAILURE() << "cut at " << cut << ": " << reading << ", expected " << expected;
      return;  // one report, not one per place
    }
  }
}

/// A usage body's three counts, each read as expect_in_any_pieces reads it.
struct UsageCounts {
  std::uint64_t total;
  std::uint64_t input;
  std::uint64_t output;
};
void expect_counts(Usage usage, std::string_view content_type, std::string_view body,
                   const UsageCounts& expected) {
  for (const auto& [count, value] :
       {std::pair{UsageCount::total, expected.total}, std::pair{UsageCount::input, expected.input},
        std::pair{UsageCount::output, expected.output}}) {
    expect_in_any_pieces(usage_spec(usage, count), content_type, body,
                         "reported " + std::to_string(value));
  }
}

TEST(ResponseMeter, ReadsAnOpenAiChatCompletion) {
  expect_counts(Usage::openai, kJson, kOpenAiChatJson,
                {.total = 1163, .input = 1117, .output = 46});
}

TEST(ResponseMeter, ReadsAnOpenAiChatStreamsLastChunk) {
  const std::string_view content_type = "text/event-stream; charset=utf-8";
  expect_counts(Usage::openai, content_type, kOpenAiChatStream,
                {.total = 29, .input = 19, .output = 10});
}

TEST(ResponseMeter, ReadsAnOpenAiResponse) {
  expect_counts(Usage::openai, kJson, kOpenAiResponseJson,
                {.total = 123, .input = 36, .output = 87});
}

TEST(ResponseMeter, ReadsAnOpenAiResponseStreamsCompletedEvent) {
  expect_counts(Usage::openai, kEventStream, kOpenAiResponseStream,
                {.total = 48, .input = 37, .output = 11});
}

TEST(ResponseMeter, ReadsAnAnthropicMessageWithItsCachedInputAsInput) {
  // input 2095 + cache writes 120 + cache reads 1800.
  expect_counts(Usage::anthropic, kJson, kAnthropicJson,
                {.total = 4518, .input = 4015, .output = 503});
}

TEST(ResponseMeter, TakesAnthropicsLastCumulativeCountNotTheirSum) {
  // message_start: 25 in, 10 read from the cache, 1 out; message_delta: 9 out, then 15 out.
  expect_counts(Usage::anthropic, kEventStream, kAnthropicStream,
                {.total = 50, .input = 35, .output = 15});
}

TEST(ResponseMeter, AnthropicDeltasReplaceInputAndCacheCountsToo) {
  const std::string stream = std::string(kAnthropicStream) +
                             R"(event: message_delta
data: {"type":"message_delta","delta":{},"usage":{"input_tokens":30,"cache_read_input_tokens":0,"output_tokens":16}}

)";
  expect_in_any_pieces(usage_spec(Usage::anthropic, UsageCount::input), kEventStream, stream,
                       "reported 30");
  expect_in_any_pieces(usage_spec(Usage::anthropic, UsageCount::total), kEventStream, stream,
                       "reported 46");
}

TEST(ResponseMeter, AStreamCutBeforeItsUsageIsMissing) {
  const std::string_view before_usage =
      kOpenAiChatStream.substr(0, kOpenAiChatStream.find(R"("choices":[],"usage")"));
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kEventStream, before_usage),
            "missing");
  // The usage chunk cut in the middle of its total: no half number is taken.
  const std::string_view in_total =
      kOpenAiChatStream.substr(0, kOpenAiChatStream.find(R"("total_tokens":29)") + 16);
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kEventStream, in_total),
            "missing");
  // A stream that asked for no usage.
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kEventStream,
                        "data: {\"choices\":[],\"usage\":null}\n\ndata: [DONE]\n\n"),
            "missing");
}

TEST(ResponseMeter, AStreamCutBeforeItsBlankLineStillCountsItsLastWholeEvent) {
  std::string_view without_end =
      kOpenAiChatStream.substr(0, kOpenAiChatStream.find("data: [DONE]"));
  without_end.remove_suffix(2);  // the usage chunk's blank line
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kEventStream, without_end),
            "reported 29");
}

TEST(ResponseMeter, AnAnthropicStreamCutAfterMessageStartHasItsFirstCounts) {
  const std::string_view after_start =
      kAnthropicStream.substr(0, kAnthropicStream.find("event: content_block_start"));
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::input), kEventStream, after_start),
            "reported 35");
  EXPECT_EQ(
      meter_whole(usage_spec(Usage::anthropic, UsageCount::output), kEventStream, after_start),
      "reported 1");
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::total), kEventStream, after_start),
            "reported 36");
  // Cut after the first delta: its count, not the one that never came.
  const std::string_view after_first_delta =
      kAnthropicStream.substr(0, kAnthropicStream.rfind("event: message_delta"));
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::output), kEventStream,
                        after_first_delta),
            "reported 9");
}

TEST(ResponseMeter, AJsonBodyCutShortCountsWhatItHeldWhole) {
  const std::string_view before_usage =
      kOpenAiChatJson.substr(0, kOpenAiChatJson.find("\"usage\""));
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson, before_usage),
            "missing");
  const std::string_view after_total =
      kOpenAiChatJson.substr(0, kOpenAiChatJson.find("\"prompt_tokens_details\""));
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson, after_total),
            "reported 1163");
  // Cut inside "1163": the end would complete "116", which is not taken...
  const std::string_view in_total = kOpenAiChatJson.substr(0, kOpenAiChatJson.find("1163") + 3);
  EXPECT_EQ(meter_whole(json_spec({"usage", "total_tokens"}), kJson, in_total), "missing");
  // ...so the total is the input and output before it.
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson, in_total),
            "reported 1163");
}

TEST(ResponseMeter, OpenAiTotalIsInputPlusOutputWhenNotGiven) {
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson,
                        R"({"usage":{"prompt_tokens":7,"completion_tokens":5}})"),
            "reported 12");
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson,
                        R"({"usage":{"prompt_tokens":7}})"),
            "missing");
  // Embeddings: no output, a total.
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), kJson,
                        R"({"object":"list","usage":{"prompt_tokens":8,"total_tokens":8}})"),
            "reported 8");
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::output), kJson,
                        R"({"object":"list","usage":{"prompt_tokens":8,"total_tokens":8}})"),
            "missing");
}

TEST(ResponseMeter, ANeededCountThatIsNotACostIsInvalid) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":-3}})"), "invalid: negative");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":"29"}})"),
            "invalid: not a number");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":29.5}})"), "invalid: fractional");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":4294967296}})"),
            "invalid: too large");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":29.0}})"), "reported 29");
  // Without a total, the sum of an invalid input and a good output is invalid.
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"prompt_tokens":true,"completion_tokens":5}})"),
            "invalid: not a number");
  // An invalid count that is not needed does not matter.
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::output), kJson,
                        R"({"usage":{"prompt_tokens":-1,"completion_tokens":5}})"),
            "reported 5");
  // Anthropic's sum beyond a cost.
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::total), kJson,
                        R"({"usage":{"input_tokens":4294967295,"output_tokens":1}})"),
            "invalid: too large");
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::input), kJson,
                        R"({"usage":{"input_tokens":4,"cache_read_input_tokens":"x"}})"),
            "invalid: not a number");
  // Anthropic's cache counts are optional, its input is not.
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::input), kJson,
                        R"({"usage":{"input_tokens":4,"cache_read_input_tokens":null}})"),
            "reported 4");
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::input), kJson,
                        R"({"usage":{"cache_read_input_tokens":4,"output_tokens":3}})"),
            "missing");
}

TEST(ResponseMeter, ALaterEventsInvalidCountReplacesAnEarlierGoodOne) {
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::output), kEventStream,
                        "data: {\"usage\":{\"output_tokens\":4}}\n\n"
                        "data: {\"usage\":{\"output_tokens\":-4}}\n\n"),
            "invalid: negative");
  // And null does not: it says nothing.
  EXPECT_EQ(meter_whole(usage_spec(Usage::anthropic, UsageCount::output), kEventStream,
                        "data: {\"usage\":{\"output_tokens\":4}}\n\n"
                        "data: {\"usage\":{\"output_tokens\":null}}\n\n"),
            "reported 4");
}

TEST(ResponseMeter, ReadsEventStreamsWithAnyLineEndingCommentsAndSplitData) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  const std::string chunk = R"({"choices":[],"usage":{"total_tokens":29}})";
  // \r\n, with a comment, an id and a retry between.
  expect_in_any_pieces(
      total, kEventStream,
      ": keep-alive\r\nid: 7\r\nretry: 1000\r\ndata: " + chunk + "\r\n\r\ndata: [DONE]\r\n\r\n",
      "reported 29");
  // \r alone.
  expect_in_any_pieces(total, kEventStream, "data: " + chunk + "\r\rdata: [DONE]\r\r",
                       "reported 29");
  // `data:` without its space, the document over three data lines.
  expect_in_any_pieces(total, kEventStream,
                       "data:{\"choices\":[],\ndata:\"usage\":{\"total_tokens\"\ndata: :29}}\n\n",
                       "reported 29");
  // Case and parameters of the content type do not matter; without its blank line the event
  // still counts at the end.
  expect_in_any_pieces(total, " Text/Event-Stream ; charset=UTF-8", "data: " + chunk,
                       "reported 29");
  // The `event:` line does not matter either: only the data's paths do.
  expect_in_any_pieces(total, kEventStream, "event: ping\ndata: " + chunk + "\n\n", "reported 29");
}

TEST(ResponseMeter, ReadsEventsLookedAtAheadAsThoseParsedAsTheyCome) {
  // Whole, an event is looked at in its piece before it is parsed; a byte at a time, or cut, it
  // is parsed as it comes: the same readings.
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  const std::string chunk = R"({"choices":[{"delta":{"content":"x"}}],"usage":null})";
  // A name inside a string is no member's.
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"usage\":{\"total_tokens\":29}}\n\n"
                       "data: {\"text\":\"\\\"usage\\\":{\\\"total_tokens\\\":5}\",\"usage\":null}"
                       "\n\ndata: " +
                           chunk + "\n\ndata: [DONE]\n\n",
                       "reported 29");
  // Spaces around the colon, and a value on a path after one that is null.
  expect_in_any_pieces(total, kEventStream,
                       "data: " + chunk +
                           "\n\ndata: { \"usage\" : { \"total_tokens\" : 31 } }\n\n" +
                           "data: " + chunk + "\n\n",
                       "reported 31");
  // Usage deeper than its path is not the response's.
  expect_in_any_pieces(
      total, kEventStream,
      "data: {\"usage\":{\"total_tokens\":3}}\n\n"
      "data: {\"choices\":[{\"usage\":{\"total_tokens\":4}}],"
      "\"x\":{\"usage\":{\"total_tokens\":5}},\"usage\":{\"a\":{\"total_tokens\":6}}}"
      "\n\n",
      "reported 3");
  // An escaped name, a document over two data lines, an event with a comment amid.
  expect_in_any_pieces(total, kEventStream, "data: {\"\\u0075sage\":{\"total_tokens\":8}}\n\n",
                       "reported 8");
  expect_in_any_pieces(total, kEventStream,
                       "data: " + chunk + "\n\ndata: {\"usage\":\ndata: {\"total_tokens\":9}}\n\n",
                       "reported 9");
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"usage\":\n: ping\ndata: {\"total_tokens\":10}}\n\n",
                       "reported 10");
  // An invalid document with a value on a path says nothing, looked at or not.
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"usage\":{\"total_tokens\":11}}\n\n"
                       "data: {\"x\":tru,\"usage\":{\"total_tokens\":12}}\n\n"
                       "data: {\"usage\":nul,\"total_tokens\":13}\n\n",
                       "reported 11");
  // A null count does not replace an earlier one; an invalid one does.
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"usage\":{\"total_tokens\":14}}\n\n"
                       "data: {\"usage\":{\"total_tokens\" : null}}\n\n",
                       "reported 14");
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"usage\":{\"total_tokens\":14}}\n\n"
                       "data: {\"usage\":{\"total_tokens\":\"15\"}}\n\n",
                       "invalid: not a number");
  // OpenAI's responses and Anthropic's messages, nested one deeper.
  expect_in_any_pieces(total, kEventStream,
                       "data: {\"response\":{\"usage\":{\"total_tokens\":16}}}\n\n"
                       "data: {\"response\":{\"id\":\"r\",\"usage\":null}}\n\n",
                       "reported 16");
  expect_in_any_pieces(usage_spec(Usage::anthropic, UsageCount::input), kEventStream,
                       "data: {\"message\":{\"usage\":{\"input_tokens\":17}}}\n\n"
                       "data: {\"type\":\"ping\"}\n\n",
                       "reported 17");
}

/// Expects `body` to read `expected` in the given pieces, and in pieces of each size from 1 to
/// `max_size` bytes, as reads cut it.
void expect_in_pieces(const MeterSpec& spec, std::string_view body,
                      const std::vector<std::string_view>& pieces, std::size_t max_size,
                      const std::string& expected) {
  ResponseMeter meter;
  EXPECT_EQ(meter_pieces(meter, spec, kEventStream,
                         pieces.empty() ? std::vector<std::string_view>{body} : pieces),
            expected)
      << "given pieces";
  for (std::size_t size = 1; size <= max_size; ++size) {
    std::vector<std::string_view> sized;
    for (std::size_t at = 0; at < body.size(); at += size) {
      sized.push_back(body.substr(at, size));
    }
    const std::string reading = meter_pieces(meter, spec, kEventStream, sized);
    if (reading != expected) {
      ADD_FAILURE() << "pieces of " << size << ": " << reading << ", expected " << expected;
      return;
    }
  }
}

TEST(ResponseMeter, ReadsEventsCarriedAcrossPiecesAsThoseSeenWhole) {
  // An event cut by a piece's end is held to its end and looked at then: the same readings
  // as whole, wherever the cuts fall.
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  const std::string chunk = R"({"choices":[{"delta":{"content":"x"}}],"usage":null})";
  const std::string usage = R"({"choices":[],"usage":{"total_tokens":21}})";
  const std::string body =
      "data: " + chunk + "\n\ndata: " + usage + "\n\ndata: " + chunk + "\n\ndata: [DONE]\n\n";
  const std::string_view all = body;
  const std::size_t second = body.find("data: {\"choices\":[]");
  // Cut in a data line, in the usage's name, in the blank line, right after `data:` and after
  // its space.
  expect_in_pieces(total, body, {all.substr(0, 20), all.substr(20)}, 0, "reported 21");
  const std::size_t tokens = body.find("_tokens");
  expect_in_pieces(total, body,
                   {all.substr(0, tokens + 3), all.substr(tokens + 3, 2), all.substr(tokens + 5)},
                   0, "reported 21");
  const std::size_t blank = body.find("\n\n", second) + 1;
  expect_in_pieces(total, body, {all.substr(0, blank), all.substr(blank)}, 0, "reported 21");
  expect_in_pieces(total, body, {all.substr(0, second + 5), all.substr(second + 5)}, 0,
                   "reported 21");
  expect_in_pieces(total, body, {all.substr(0, second + 6), all.substr(second + 6)}, 0,
                   "reported 21");
  expect_in_pieces(total, body, {}, 300, "reported 21");
  // \r\n endings split between pieces, and an event over two data lines, carried.
  const std::string crlf =
      "data: " + chunk + "\r\n\r\ndata: {\"usage\":\r\ndata: {\"total_tokens\":22}}\r\n\r\n";
  const std::size_t cr = crlf.find('\r');
  expect_in_pieces(
      total, crlf,
      {std::string_view(crlf).substr(0, cr + 1), std::string_view(crlf).substr(cr + 1)}, 200,
      "reported 22");
  // Bare `data` lines, a `data:` at a piece's end, and \r endings.
  const std::string bare = "data\n\ndata\r\rdata:\n\ndata: " + usage + "\n\ndata\r\r\r";
  expect_in_pieces(total, bare, {}, 80, "reported 21");
  // The usage's name spelled with an escape, cut.
  const std::string escaped =
      "data: " + chunk + "\n\ndata: {\"\\u0075sage\":{\"total_tokens\":23}}\n\n";
  expect_in_pieces(total, escaped, {std::string_view(escaped)}, 150, "reported 23");
  // A stream cut short in a carried line counts what it holds whole: nothing here.
  expect_in_pieces(total, "data: {\"usage\":{\"total_tokens\":24}}\n\ndata: {\"usage\":{\"tot", {},
                   60, "reported 24");
  expect_in_pieces(total, "data: {\"usage\":{\"total_tokens\":25}}", {}, 40, "reported 25");
}

TEST(ResponseMeter, FindsTheUsageWhereverItFallsInALongLine) {
  // The line scan goes 64, 32 or 16 bytes at a time, then byte by byte: the usage's name, an
  // escape and a false start (`_`) at every offset of those blocks, and lines that end anywhere.
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  for (std::size_t pad = 0; pad < 140; ++pad) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    const std::string padding(pad, 'x');
    const std::string skipped = "data: {\"p\":\"" + padding + "_x\",\"usage\":null}\n\n";
    const std::string plain = skipped + "data: {\"p\":\"" + padding +
                              "\",\"usage\":{\"total_tokens\":" + std::to_string(pad) + "}}\n\n";
    expect_in_pieces(total, plain, {}, 0, "reported " + std::to_string(pad));
    const std::string escaped = skipped + "data: {\"p\":\"" + padding +
                                "\",\"usage\":{\"total\\u005ftokens\":" + std::to_string(pad) +
                                "}}\n\n";
    expect_in_pieces(total, escaped, {}, 0, "reported " + std::to_string(pad));
  }
}

TEST(ResponseMeter, PassesOverRunsOfEventsWithoutATargetButNoneThatHasOne) {
  // Events without a target are passed over many at a time, up to the next backslash or
  // ending: an escaped newline in a chunk, comments and other fields among them, \r\n events,
  // then the usage (twice: the last counts), its name once spelled with an escape.
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  const std::string chunk =
      R"(data: {"choices":[{"delta":{"content":"x"},"finish_reason":null}],"usage":null})"
      "\n\n";
  std::string body;
  for (int i = 0; i < 30; ++i) {
    body += chunk;
  }
  body += R"(data: {"choices":[{"delta":{"content":"a\nb"}}],"usage":null})"
          "\n\n: a comment\nevent: chunk\nid: 7\n\n";
  for (int i = 0; i < 10; ++i) {
    body += chunk;
  }
  body += "data: {\"usage\":{\"total_tokens\":31}}\r\n\r\n" + chunk + chunk;
  body += "data: {\"usage\":{\"total\\u005ftokens\":32}}\n\n" + chunk + "data: [DONE]\n\n";
  expect_in_pieces(total, body, {}, 400, "reported 32");
  // Without the last usage event: the one before counts.
  const std::string earlier = body.substr(0, body.find("data: {\"usage\":{\"total\\"));
  expect_in_pieces(total, earlier, {}, 200, "reported 31");
}

TEST(ResponseMeter, ParsesCarriedDataLongerThanItsRoomAsItComes) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  const std::string text(ResponseMeter::kCarryRoom + 100, 'x');
  // Longer than the room, with usage or without, cut where the room runs out and further on.
  const std::string body =
      "data: {\"text\":\"" + text + "\",\"usage\":null}\n\ndata: {\"text\":\"" + text +
      "\",\"usage\":{\"total_tokens\":26}}\n\ndata: {\"text\":\"" + text + "\",\"usage\":null}\n\n";
  const std::string_view all = body;
  const std::size_t room = ResponseMeter::kCarryRoom;
  expect_in_pieces(total, body, {all.substr(0, 10), all.substr(10, room), all.substr(10 + room)}, 0,
                   "reported 26");
  const std::size_t second = body.find("data:", 10);
  expect_in_pieces(total, body,
                   {all.substr(0, second + 20), all.substr(second + 20, room - 30),
                    all.substr(second + room - 10, 20), all.substr(second + room + 10)},
                   0, "reported 26");
  for (const std::size_t size : {1448UL, 4096UL, 4097UL, 5000UL}) {
    std::vector<std::string_view> pieces;
    for (std::size_t at = 0; at < body.size(); at += size) {
      pieces.push_back(all.substr(at, size));
    }
    expect_in_pieces(total, body, pieces, 0, "reported 26");
  }
  // Exactly the room, and one byte past it, carried.
  for (const std::size_t length : {room - 2, room - 1, room, room + 1}) {
    const std::string head = "{\"usage\":{\"total_tokens\":27},\"t\":\"";
    const std::string data = head + std::string(length - head.size() - 2, 'y') + "\"}";
    ASSERT_EQ(data.size(), length);
    const std::string event = "data: " + data + "\n\n";
    expect_in_pieces(total, event,
                     {std::string_view(event).substr(0, 8), std::string_view(event).substr(8)}, 0,
                     "reported 27");
  }
}

TEST(ResponseMeter, StartForgetsACarriedEvent) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  ResponseMeter meter;
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {"data: {\"usage\":{\"total_tok"}), "missing");
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {"ens\":28}}\n\n"}), "missing");
  EXPECT_EQ(
      meter_pieces(meter, total, kEventStream, {"data: {\"usage\":", "{\"total_tokens\":29}}\n\n"}),
      "reported 29");
}

TEST(ResponseMeter, ReadsAnEventStreamOnlyWhenTheContentTypeSaysSo) {
  const std::string stream = R"(data: {"usage":{"total_tokens":29}})"
                             "\n\n";
  EXPECT_EQ(
      meter_whole(usage_spec(Usage::openai, UsageCount::total), "text/event-stream-x", stream),
      "invalid: malformed JSON");
  EXPECT_EQ(meter_whole(usage_spec(Usage::openai, UsageCount::total), "text/plain", stream),
            "invalid: malformed JSON");
}

TEST(ResponseMeter, SkipsEventsThatAreNotJsonDocuments) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  EXPECT_EQ(meter_whole(total, kEventStream,
                        "data: {\"usage\":{\"total_tokens\":29}}\n\n"
                        "data: {\"usage\":{\"total_tokens\":30}} trailing\n\n"
                        "data: {\"usage\":{\"total_tokens\":31}\n\n"
                        "data: {\"usage\":{\"total_tokens\":32}}{}\n\n"
                        "data: [DONE]\n\n"),
            "reported 29");
  // An event whose first document is whole and a second data line starts another.
  EXPECT_EQ(meter_whole(total, kEventStream,
                        "data: {\"usage\":{\"total_tokens\":29}}\n\n"
                        "data: {\"usage\":{\"total_tokens\":33}}\ndata: {}\n\n"),
            "reported 29");
}

TEST(ResponseMeter, ReadsAJsonPathInNestedObjectsButNotInArrays) {
  const MeterSpec path = json_spec({"usage", "total_tokens"});
  expect_in_any_pieces(path, kJson,
                       R"({"list":[{"usage":{"total_tokens":1}}],"usage":{"a":{"total_tokens":2},)"
                       R"("total_tokens":77,"b":[{"total_tokens":3}]},"x":{"usage":4}})",
                       "reported 77");
  EXPECT_EQ(meter_whole(path, kJson, R"([{"usage":{"total_tokens":1}}])"), "missing");
  EXPECT_EQ(meter_whole(path, kJson, R"({"data":{"usage":{"total_tokens":1}}})"), "missing");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":null}})"), "missing");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":"7"}})"), "invalid: not a number");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":false}})"),
            "invalid: not a number");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":{"n":7}}})"),
            "invalid: not a number");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":[7]}})"), "invalid: not a number");
  EXPECT_EQ(meter_whole(path, kJson, R"({"usage":{"total_tokens":1e3}})"), "reported 1000");
  // Escaped names are their text.
  EXPECT_EQ(meter_whole(path, kJson, R"({"\u0075sage":{"total_tokens":8}})"), "reported 8");
  // A one-key path, and a route's path with a name the usage formats do not know.
  EXPECT_EQ(meter_whole(json_spec({"cost"}), kJson, R"({"cost":12,"usage":{"total_tokens":8}})"),
            "reported 12");
}

TEST(ResponseMeter, TakesTheLastEventThatHasTheJsonPath) {
  expect_in_any_pieces(json_spec({"meta", "cost"}), kEventStream,
                       "data: {\"meta\":{\"cost\":3}}\n\n"
                       "data: {\"meta\":{}}\n\n"
                       "data: {\"meta\":{\"cost\":5}}\n\n"
                       "data: {\"other\":1}\n\n",
                       "reported 5");
}

TEST(ResponseMeter, AMalformedJsonBodyIsInvalid) {
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":29}}} )"),
            "invalid: malformed JSON");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":29}},{})"),
            "invalid: malformed JSON");
  EXPECT_EQ(meter_whole(total, kJson, "<html>502 Bad Gateway</html>"), "invalid: malformed JSON");
  EXPECT_EQ(meter_whole(total, kJson, R"({"usage":{"total_tokens":29},,})"),
            "invalid: malformed JSON");
  // An empty body says nothing.
  EXPECT_EQ(meter_whole(total, kJson, ""), "missing");
  EXPECT_EQ(meter_whole(total, kJson, " \n"), "missing");
  // Whitespace after the document is part of it.
  EXPECT_EQ(meter_whole(total, kJson, "{\"usage\":{\"total_tokens\":29}}\r\n\n"), "reported 29");
  // Text that is not UTF-8 in a string does not lose the usage.
  EXPECT_EQ(meter_whole(total, kJson, "{\"text\":\"\xff\xfe\",\"usage\":{\"total_tokens\":29}}"),
            "reported 29");
}

TEST(ResponseMeter, RefusesDeepNestingWithoutCrashingOrGrowing) {
  const std::string deep(10'000, '[');
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  ResponseMeter meter;
  EXPECT_EQ(meter_pieces(meter, total, kJson, {deep}), "invalid: nested too deeply");
  Reading again;
  EXPECT_EQ(test::allocations_during([&] {
              meter.start(total, kJson);
              meter.body(bytes_of(deep));
              again = meter.finish();
            }),
            0U);
  EXPECT_EQ(describe(again), "invalid: nested too deeply");
  // In a stream it is one event skipped; the next is read.
  const std::string stream = "data: " + deep + "\n\ndata: {\"usage\":{\"total_tokens\":29}}\n\n";
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {stream}), "reported 29");
  // As deep as the reader follows (64 levels, the object's included), and one level deeper.
  const std::string nested =
      "{\"usage\":{\"total_tokens\":29},\"x\":" + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_EQ(meter_pieces(meter, total, kJson, {nested}), "reported 29");
  const std::string one_deeper =
      "{\"usage\":{\"total_tokens\":29},\"x\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_EQ(meter_pieces(meter, total, kJson, {one_deeper}), "invalid: nested too deeply");
}

TEST(ResponseMeter, ReadsTenMegabytesOfStreamInFixedMemory) {
  // Chunks as OpenAI streams them, fed in pieces that cut them anywhere.
  std::string chunks;
  while (chunks.size() < 64 * 1024) {
    chunks +=
        R"(data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,)"
        R"("model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello, how are you )"
        R"(doing today?"},"logprobs":null,"finish_reason":null}],"usage":null})"
        "\n\n";
  }
  const std::string last =
      R"(data: {"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}})"
      "\n\ndata: [DONE]\n\n";
  std::vector<std::string_view> pieces;
  for (int repeat = 0; repeat < 160; ++repeat) {  // 10 MiB
    for (std::size_t at = 0; at < chunks.size(); at += 1000) {
      pieces.push_back(std::string_view(chunks).substr(at, 1000));
    }
  }
  pieces.push_back(last);
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  ResponseMeter meter;
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, pieces), "reported 29");  // warms it
  Reading again;
  EXPECT_EQ(test::allocations_during([&] {
              meter.start(total, kEventStream);
              for (const std::string_view piece : pieces) {
                meter.body(bytes_of(piece));
              }
              again = meter.finish();
            }),
            0U);
  EXPECT_EQ(describe(again), "reported 29");
}

TEST(ResponseMeter, ReadsAHeaderReplacedByItsTrailer) {
  const MeterSpec spec = header_spec("X-Tokens-Used");
  ResponseMeter meter;
  meter.start(spec, kJson);
  meter.field("content-type", "application/json");
  meter.field("x-tokens-used", " 42 ");
  meter.body(bytes_of(R"({"usage":{"total_tokens":29}})"));
  EXPECT_EQ(describe(meter.finish()), "reported 42");

  meter.start(spec, kJson);
  meter.field("X-TOKENS-USED", "42");
  meter.trailer("x-tokens-used", "43");
  EXPECT_EQ(describe(meter.finish()), "reported 43");

  // Only in the trailers (gRPC's way), or not at all.
  meter.start(spec, "application/grpc");
  meter.trailer("X-Tokens-Used", "7");
  EXPECT_EQ(describe(meter.finish()), "reported 7");
  meter.start(spec, kJson);
  meter.field("x-tokens-used-by", "7");
  EXPECT_EQ(describe(meter.finish()), "missing");
}

TEST(ResponseMeter, RefusesAHeaderThatIsNotACost) {
  const MeterSpec spec = header_spec("x-cost");
  ResponseMeter meter;
  for (const auto& [value, expected] :
       std::vector<std::pair<std::string_view, std::string>>{{"-5", "invalid: negative"},
                                                             {"1.5", "invalid: fractional"},
                                                             {"99999999999", "invalid: too large"},
                                                             {"abc", "invalid: not a number"},
                                                             {"", "invalid: not a number"},
                                                             {"4294967295", "reported 4294967295"},
                                                             {"0", "reported 0"}}) {
    meter.start(spec, kJson);
    meter.field("x-cost", value);
    EXPECT_EQ(describe(meter.finish()), expected) << value;
  }
  // A good trailer mends a bad head, and a bad one spoils a good head.
  meter.start(spec, kJson);
  meter.field("x-cost", "abc");
  meter.trailer("x-cost", "5");
  EXPECT_EQ(describe(meter.finish()), "reported 5");
  meter.start(spec, kJson);
  meter.field("x-cost", "5");
  meter.trailer("x-cost", "-5");
  EXPECT_EQ(describe(meter.finish()), "invalid: negative");
}

TEST(ResponseMeter, CountsBodyBytes) {
  MeterSpec spec;
  spec.kind = MeterSpec::Kind::bytes;
  expect_in_any_pieces(spec, kJson, kOpenAiChatJson,
                       "reported " + std::to_string(kOpenAiChatJson.size()));
  expect_in_any_pieces(spec, kEventStream, kAnthropicStream,
                       "reported " + std::to_string(kAnthropicStream.size()));
  EXPECT_EQ(meter_whole(spec, kJson, ""), "reported 0");
}

TEST(ResponseMeter, StartForgetsTheLastResponse) {
  ResponseMeter meter;
  const MeterSpec total = usage_spec(Usage::openai, UsageCount::total);
  EXPECT_EQ(meter_pieces(meter, total, kJson, {kOpenAiChatJson}), "reported 1163");
  EXPECT_EQ(meter_pieces(meter, total, kJson, {"{}"}), "missing");
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {kOpenAiChatStream}), "reported 29");
  // A stream that ends inside an event, then a new one: nothing of the old event carries over.
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {"data: {\"usage\":{\"tot"}), "missing");
  EXPECT_EQ(meter_pieces(meter, total, kEventStream, {"al_tokens\":5}}\n\n"}), "missing");
  EXPECT_EQ(meter_pieces(meter, total, kJson, {"<html>"}), "invalid: malformed JSON");
  EXPECT_EQ(meter_pieces(meter, total, kJson, {kOpenAiChatJson}), "reported 1163");
  // A finished meter reads nothing more.
  EXPECT_EQ(describe(meter.finish()), "missing");
  meter.body(bytes_of(kOpenAiChatJson));
  EXPECT_EQ(describe(meter.finish()), "missing");
}

}  // namespace
}  // namespace sluice::cost
