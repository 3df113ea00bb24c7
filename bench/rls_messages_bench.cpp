// What a ShouldRateLimit call's messages cost on one core (SPEC §11): a request of two
// descriptors (three entries, as Envoy sends a remote address and a route's keys) unframed and
// parsed into one reused RateLimitRequest (what a loop does), into a new one per call, and into
// a new one on an Arena reset per call (protobuf's other way of not allocating per call); and the
// answer for it encoded, with its gRPC prefix, into one reused string.
#include <benchmark/benchmark.h>
#include <google/protobuf/arena.h>

#include <array>
#include <chrono>
#include <string>

#include "proxy/rls/rls_messages.hpp"

namespace {

using namespace sluice;

std::string framed_request() {
  rls::RateLimitRequest request;
  request.set_domain("edge-proxy-production");
  auto* address = request.add_descriptors()->add_entries();
  address->set_key("remote_address");
  address->set_value("2001:db8:85a3::8a2e:370:7334");
  auto* route = request.add_descriptors();
  route->add_entries()->set_key("destination_cluster");
  route->mutable_entries(0)->set_value("checkout-service-v2");
  route->add_entries()->set_key("authenticated_client_identifier");
  route->mutable_entries(1)->set_value("tenant-00042-production");
  const std::string message = request.SerializeAsString();
  std::string body(rls::kPrefixBytes, '\0');
  body[4] = static_cast<char>(message.size());  // under 256 bytes
  return body + message;
}

void BM_ParseIntoReusedRequest(benchmark::State& state) {
  const std::string body = framed_request();
  rls::RateLimitRequest request;
  for (auto _ : state) {
    const rls::Unframed unframed = rls::unframe_request(body);
    benchmark::DoNotOptimize(rls::parse_request(unframed.message, request));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_ParseIntoReusedRequest);

void BM_ParseIntoNewRequest(benchmark::State& state) {
  const std::string body = framed_request();
  for (auto _ : state) {
    rls::RateLimitRequest request;
    const rls::Unframed unframed = rls::unframe_request(body);
    benchmark::DoNotOptimize(rls::parse_request(unframed.message, request));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_ParseIntoNewRequest);

void BM_ParseIntoArenaRequest(benchmark::State& state) {
  const std::string body = framed_request();
  alignas(8) static std::array<char, 8192> block;
  google::protobuf::ArenaOptions options;
  options.initial_block = block.data();
  options.initial_block_size = block.size();
  google::protobuf::Arena arena(options);
  for (auto _ : state) {
    auto* request = google::protobuf::Arena::CreateMessage<rls::RateLimitRequest>(&arena);
    const rls::Unframed unframed = rls::unframe_request(body);
    benchmark::DoNotOptimize(rls::parse_request(unframed.message, *request));
    arena.Reset();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_ParseIntoArenaRequest);

void BM_EncodeResponse(benchmark::State& state) {
  rls::RateLimitResponse response;
  response.set_overall_code(rls::RateLimitResponse::OVER_LIMIT);
  for (int i = 0; i < 2; ++i) {
    auto* status = response.add_statuses();
    status->set_code(i == 0 ? rls::RateLimitResponse::OK : rls::RateLimitResponse::OVER_LIMIT);
    status->mutable_current_limit()->set_requests_per_unit(100);
    status->mutable_current_limit()->set_unit(rls::RateLimitResponse::RateLimit::MINUTE);
    status->set_limit_remaining(i == 0 ? 41 : 0);
    rls::set_duration(std::chrono::milliseconds(12'345), *status->mutable_duration_until_reset());
  }
  std::string out;
  for (auto _ : state) {
    rls::encode_response(response, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(BM_EncodeResponse);

}  // namespace

BENCHMARK_MAIN();
