// What reading a response's cost costs, per byte, on one core (SPEC §9): the cost meter over 1 MiB
// streams (OpenAI's chat and responses, Anthropic's messages) and a 4 KiB chat completion, lent in
// the relay's 16 KiB pieces (the chat stream also in the smaller pieces reads often return),
// against copying the same pieces (what relaying a body does to each byte at the least). The
// end-to-end numbers through the proxy are in docs/benchmarks.md ("Cost from the response").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "proxy/cost/response_meter.hpp"

namespace {

using namespace sluice;

constexpr std::size_t kPiece = 16 * 1024;

/// An OpenAI chat completion streamed with include_usage: `bytes` of content chunks (each with
/// `"usage": null`), then the usage chunk and [DONE].
std::string chat_stream(std::size_t bytes) {
  std::string body;
  while (body.size() < bytes) {
    body +=
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
        "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The quick "
        "brown fox jumps over the lazy dog.\"},\"finish_reason\":null}],\"usage\":null}\n\n";
  }
  body +=
      "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,"
      "\"completion_tokens\":20000,\"total_tokens\":20050}}\n\ndata: [DONE]\n\n";
  return body;
}

/// An OpenAI response streamed: `response.created` (its usage null), `bytes` of text deltas,
/// then `response.completed` with the usage.
std::string response_stream(std::size_t bytes) {
  std::string body =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":"
      "\"resp_1\",\"status\":\"in_progress\",\"model\":\"gpt-4o-mini\",\"usage\":null}}\n\n";
  while (body.size() < bytes) {
    body +=
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
        "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"The quick "
        "brown fox jumps over the lazy dog.\"}\n\n";
  }
  body +=
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
      "\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":50,\"output_tokens\":"
      "20000,\"total_tokens\":20050}}}\n\n";
  return body;
}

/// An Anthropic message streamed: message_start with the input, `bytes` of text deltas, then
/// message_delta with the output so far.
std::string anthropic_stream(std::size_t bytes) {
  std::string body =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
      "\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":50,\"output_tokens\":1}}}\n\n";
  while (body.size() < bytes) {
    body +=
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"The quick brown fox jumps over the lazy "
        "dog.\"}}\n\n";
  }
  body +=
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"end_turn\"},\"usage\":{\"output_tokens\":20000}}\n\nevent: message_stop\ndata: "
      "{\"type\":\"message_stop\"}\n\n";
  return body;
}

/// A chat completion of about `bytes`, its usage last.
std::string chat_completion(std::size_t bytes) {
  std::string content;
  while (content.size() < bytes - 300) {
    content += "The quick brown fox jumps over the lazy dog. ";
  }
  return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-mini\","
         "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" +
         content +
         "\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":"
         "900,\"total_tokens\":950}}";
}

/// Piece sizes as a socket's reads give them when the upstream writes from another core: from a
/// TCP segment's payload to the relay's whole buffer. A fixed seed keeps runs comparable.
std::vector<std::size_t> random_pieces() {
  std::mt19937 random(20260127);
  std::vector<std::size_t> sizes(4096);
  for (std::size_t& size : sizes) {
    size = 500 + random() % (kPiece - 500 + 1);
  }
  return sizes;
}

/// The sizes the body is lent in, in turn (the last repeated).
const std::vector<std::size_t> kWholePieces = {kPiece};

void meter(benchmark::State& state, const std::string& body, std::string_view content_type,
           cost::Usage usage = cost::Usage::openai,
           std::span<const std::size_t> pieces = kWholePieces) {
  cost::MeterSpec spec;
  spec.kind = cost::MeterSpec::Kind::usage;
  spec.usage = usage;
  cost::ResponseMeter meter;
  for (auto _ : state) {
    meter.start(spec, content_type);
    std::size_t next = 0;
    for (std::size_t at = 0; at < body.size();) {
      const std::size_t size = std::min(pieces[next % pieces.size()], body.size() - at);
      meter.body({body.data() + at, size});
      at += size;
      ++next;
    }
    const cost::Reading reading = meter.finish();
    if (reading.result != cost::Reading::Result::reported) {
      state.SkipWithError("the usage was not read");
      return;
    }
    benchmark::DoNotOptimize(reading.cost);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}

void copy(benchmark::State& state, const std::string& body) {
  std::vector<char> to(kPiece);
  for (auto _ : state) {
    for (std::size_t at = 0; at < body.size(); at += kPiece) {
      const std::size_t size = std::min(kPiece, body.size() - at);
      std::memcpy(to.data(), body.data() + at, size);
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}

void BM_MeterEventStream1MiB(benchmark::State& state) {
  static const std::string body = chat_stream(1 << 20);
  meter(state, body, "text/event-stream");
}
// The same stream in the pieces reads return end to end: an Ethernet segment's payload, a page,
// and sizes between.
void BM_MeterEventStream1MiBIn1448(benchmark::State& state) {
  static const std::string body = chat_stream(1 << 20);
  static const std::vector<std::size_t> pieces = {1448};
  meter(state, body, "text/event-stream", cost::Usage::openai, pieces);
}
void BM_MeterEventStream1MiBIn4096(benchmark::State& state) {
  static const std::string body = chat_stream(1 << 20);
  static const std::vector<std::size_t> pieces = {4096};
  meter(state, body, "text/event-stream", cost::Usage::openai, pieces);
}
void BM_MeterEventStream1MiBInRandom(benchmark::State& state) {
  static const std::string body = chat_stream(1 << 20);
  static const std::vector<std::size_t> pieces = random_pieces();
  meter(state, body, "text/event-stream", cost::Usage::openai, pieces);
}
void BM_CopyEventStream1MiB(benchmark::State& state) {
  static const std::string body = chat_stream(1 << 20);
  copy(state, body);
}
void BM_MeterResponseStream1MiB(benchmark::State& state) {
  static const std::string body = response_stream(1 << 20);
  meter(state, body, "text/event-stream");
}
void BM_MeterAnthropicStream1MiB(benchmark::State& state) {
  static const std::string body = anthropic_stream(1 << 20);
  meter(state, body, "text/event-stream", cost::Usage::anthropic);
}
void BM_MeterJson4KiB(benchmark::State& state) {
  static const std::string body = chat_completion(4096);
  meter(state, body, "application/json");
}
void BM_CopyJson4KiB(benchmark::State& state) {
  static const std::string body = chat_completion(4096);
  copy(state, body);
}
BENCHMARK(BM_MeterEventStream1MiB);
BENCHMARK(BM_MeterEventStream1MiBIn1448);
BENCHMARK(BM_MeterEventStream1MiBIn4096);
BENCHMARK(BM_MeterEventStream1MiBInRandom);
BENCHMARK(BM_CopyEventStream1MiB);
BENCHMARK(BM_MeterResponseStream1MiB);
BENCHMARK(BM_MeterAnthropicStream1MiB);
BENCHMARK(BM_MeterJson4KiB);
BENCHMARK(BM_CopyJson4KiB);

}  // namespace

BENCHMARK_MAIN();
