// Envoy's rate-limit service on the decision service's port: a unary gRPC call read whole, its
// descriptors decided by the pipeline and the store as the proxy's requests are, and answered
// with a gRPC message and trailers.
#include "proxy/http/h2/rls_call.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/http/grpc_status.hpp"
#include "proxy/http/h2/stream_answers.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/pipeline/wait_seconds.hpp"
#include "proxy/rls/rls_messages.hpp"

namespace sluice::http::h2 {
namespace {

using envoy::service::ratelimit::v3::RateLimitResponse;
using telemetry::RlsResult;

/// What one call needs beyond its RequestState, kept from call to call on its loop: a call
/// borrows one for as long as it runs (another call of the loop may run while it waits), so
/// that a warm loop allocates nothing for it.
struct CallScratch {
  std::string body;
  rls::RateLimitRequest request;
  rls::RateLimitResponse response;
  std::string framed;  ///< The response message, prefixed.
  std::vector<pipeline::DescriptorEntry> entries;
  std::vector<pipeline::Descriptor> descriptors;
  std::vector<std::size_t> report_of;
  /// Each descriptor's limiter and key once prepared: its report is found again after
  /// conclude(), which drops shadow reports from a refused request.
  std::vector<std::pair<const config::LimiterConfig*, limiter::KeyHash>> decided_by;
  HeadText limit_fields;
  FieldList trailers;
};

/// A loop's spare CallScratch objects: at least 64, and up to 1,024 while that many calls are
/// in flight at once (a new one's strings, vectors and messages each allocate as they grow).
using ScratchPool = io::SparePool<CallScratch>;
constexpr std::size_t kSpareScratch = 64;
constexpr std::size_t kMaxScratch = 1024;

ScratchPool& scratch_pool(LoopContext& loop) {
  if (!loop.rls_call_scratch) {
    loop.rls_call_scratch = std::make_unique<ScratchPool>(kSpareScratch, kMaxScratch);
  }
  return static_cast<ScratchPool&>(*loop.rls_call_scratch);  // made as one just above
}

/// Ends the call with a trailers-only answer: gRPC status `code` and `message`.
io::Awaitable<void> answer_status(Connection& connection, RequestStream& stream,
                                  std::string_view code, std::string_view message,
                                  limiter::Duration timeout) {
  FieldList& fields = connection.response_fields();
  fields.clear();
  fields.set_status(200);
  fields.add("content-type", "application/grpc");
  fields.add("grpc-status", code);
  fields.add("grpc-message", message);
  stream.discard_body = true;
  connection.session().respond(stream, fields.list(), false);
  connection.flush();
  co_await await_close(connection, stream, timeout);
}

/// Reads the call's body whole into `body`; false when it did not come (the client went, was
/// too slow) or passed `limit`, which `too_large` then says.
io::Awaitable<bool> read_body(Connection& connection, RequestStream& stream, std::string& body,
                              std::size_t limit, limiter::Duration timeout, bool& too_large) {
  body.clear();
  too_large = false;
  for (;;) {
    const bool came = co_await await_body(stream, timeout);
    if (!came || stream.closed) {
      co_return false;
    }
    if (!stream.body.empty()) {
      if (body.size() + stream.body.size() > limit) {
        too_large = true;
        co_return false;
      }
      body += stream.body;
      connection.session().consume(stream, stream.body.size());
      stream.body.clear();
      connection.flush();  // the window update
    }
    if (stream.body_done) {
      co_return true;
    }
  }
}

/// The request's descriptors as the pipeline takes them: views into the parsed message.
void read_descriptors(CallScratch& scratch) {
  scratch.entries.clear();
  scratch.descriptors.clear();
  for (const auto& descriptor : scratch.request.descriptors()) {
    for (const auto& entry : descriptor.entries()) {
      scratch.entries.emplace_back(entry.key(), entry.value());
    }
  }
  std::size_t at = 0;
  for (const auto& descriptor : scratch.request.descriptors()) {
    const auto count = static_cast<std::size_t>(descriptor.entries_size());
    scratch.descriptors.emplace_back(scratch.entries.data() + at, count);
    at += count;
  }
}

/// The report of the limiter and key that decided a descriptor, or null (none did, or a
/// shadow one whose report a refusal dropped).
const pipeline::LimiterReport* report_for(
    const pipeline::Decision& decision,
    const std::pair<const config::LimiterConfig*, limiter::KeyHash>& decided_by) {
  for (const pipeline::LimiterReport& report : decision.applied()) {
    if (report.limiter == decided_by.first && report.key == decided_by.second) {
      return &report;
    }
  }
  return nullptr;
}

/// The answer's message: the overall code, a status per descriptor (in order), and the limit
/// fields the proxy would have sent with its own answer.
void write_response(CallScratch& scratch, const pipeline::Decision& decision, bool over_limit,
                    config::LimitsHeaders limits_headers) {
  RateLimitResponse& response = scratch.response;
  response.Clear();
  response.set_overall_code(over_limit ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  for (const auto& decided_by : scratch.decided_by) {
    RateLimitResponse::DescriptorStatus& status = *response.add_statuses();
    const pipeline::LimiterReport* report =
        decided_by.first != nullptr ? report_for(decision, decided_by) : nullptr;
    if (report == nullptr) {
      status.set_code(RateLimitResponse::OK);
      continue;
    }
    const bool refused = !report->verdict.admitted && !report->limiter->shadow;
    status.set_code(refused ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
    if (const auto limit = rls::current_limit(*report->options)) {
      RateLimitResponse::RateLimit& current = *status.mutable_current_limit();
      current.set_requests_per_unit(limit->requests_per_unit);
      current.set_unit(limit->unit);
      current.set_name(report->limiter->name);
    }
    status.set_limit_remaining(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(report->status.remaining, UINT32_MAX)));
    rls::set_duration(report->status.reset, *status.mutable_duration_until_reset());
  }
  // The limit fields, as "Name: value\r\n" lines, become header values.
  HeadText& fields = scratch.limit_fields;
  fields.clear();
  write_limit_headers(fields, decision, limits_headers);
  if (const auto retry_after = pipeline::retry_after_field(decision)) {
    write_field(fields, "Retry-After", *retry_after);
  }
  std::string_view lines(fields.data(), fields.size());
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      auto& header = *response.add_response_headers_to_add();
      const std::string_view name = line.substr(0, colon);
      const std::string_view value = line.substr(std::min(colon + 2, line.size()));
      header.set_key(name.data(), name.size());
      header.set_value(value.data(), value.size());
    }
    lines.remove_prefix(
        std::min(end == std::string_view::npos ? lines.size() : end + 2, lines.size()));
  }
}

}  // namespace

io::Awaitable<void> serve_rls_call(std::shared_ptr<Connection> connection,
                                   std::shared_ptr<RequestStream> stream, RequestState& state) {
  LoopContext& loop = connection->loop();
  ProxyState& proxy = loop.proxy;
  const std::shared_ptr<const live::Generation> generation = connection->generation();
  const config::ProxyConfig& config = *generation->config;
  const limiter::Duration timeout = config.timeouts.idle;
  telemetry::RlsCounters& counters = proxy.metrics.rls(loop.index);
  const ScratchPool::Lease lease = scratch_pool(loop).borrow();
  CallScratch& scratch = *lease;
  RequestStream& s = *stream;
  if (!is_grpc(state.request_head)) {
    counters.count(RlsResult::invalid);
    co_await answer_status(*connection, s, grpc_status_text(GrpcStatus::invalid_argument),
                           "not a gRPC call: Content-Type application/grpc", timeout);
    co_return;
  }
  bool too_large = false;
  const bool read = co_await read_body(*connection, s, scratch.body, rls::kMaxRequestBodyBytes,
                                       timeout, too_large);
  if (!read) {
    if (too_large) {
      counters.count(RlsResult::invalid);
      co_await answer_status(*connection, s, grpc_status_text(GrpcStatus::resource_exhausted),
                             "the request is larger than 64 KiB", timeout);
    } else if (!s.closed) {
      connection->session().reset(s, NGHTTP2_CANCEL);
      connection->flush();
    }
    co_return;
  }
  const rls::Unframed unframed = rls::unframe_request(scratch.body);
  if (unframed.framing != rls::Framing::one_message) {
    counters.count(RlsResult::invalid);
    const std::string code = std::to_string(rls::grpc_status_of(unframed.framing));
    co_await answer_status(*connection, s, code, rls::name_of(unframed.framing), timeout);
    co_return;
  }
  if (!rls::parse_request(unframed.message, scratch.request)) {
    counters.count(RlsResult::invalid);
    co_await answer_status(*connection, s, grpc_status_text(GrpcStatus::invalid_argument),
                           "not a RateLimitRequest", timeout);
    co_return;
  }
  read_descriptors(scratch);
  const std::size_t count = scratch.descriptors.size();
  scratch.report_of.resize(count);
  pipeline::Decision& decision = state.decision;
  // Given back once decided: of hundreds of calls in flight, those waiting for their answer to
  // go out hold none.
  std::optional<ChargeWorkPool::Lease> work(loop.charge_work.borrow());
  pipeline::Charges& charges = (*work)->charges;
  decision = {};
  charges = {};
  const limiter::Permits cost = std::max<limiter::Permits>(scratch.request.hits_addend(), 1);
  const limiter::TimePoint now = proxy.clock.now();
  const pipeline::DescriptorsPrepared prepared =
      generation->pipeline.prepare_descriptors(scratch.request.domain(), scratch.descriptors, cost,
                                               now, decision, charges, scratch.report_of);
  if (prepared == pipeline::DescriptorsPrepared::too_many ||
      prepared == pipeline::DescriptorsPrepared::limiter_twice) {
    counters.count(RlsResult::invalid);
    co_await answer_status(
        *connection, s, grpc_status_text(GrpcStatus::invalid_argument),
        prepared == pipeline::DescriptorsPrepared::too_many
            ? "more than 16 limiters would decide the request"
            : "two descriptors map to one limiter with different keys: one request decides "
              "a limiter once",
        timeout);
    co_return;
  }
  scratch.decided_by.assign(count, {nullptr, 0});
  for (std::size_t d = 0; d < count; ++d) {
    if (scratch.report_of[d] != pipeline::kNoReport) {
      const pipeline::LimiterReport& report = decision.reports[scratch.report_of[d]];
      scratch.decided_by[d] = {report.limiter, report.key};
    }
  }
  bool over_limit = false;
  if (prepared == pipeline::DescriptorsPrepared::charges) {
    store::Store& store = *proxy.store;
    pipeline::ChargeResult& charged = (*work)->charged;
    charged = {};
    if (!store.charge_now(loop.index, decision, charges, now, charged)) {
      co_await store.charge(loop.index, decision, charges, now, charged);
    }
    generation->pipeline.conclude(decision, charges, charged, now);
    work.reset();
    if (decision.outcome == pipeline::Outcome::denied) {  // the store failed closed
      counters.count(RlsResult::unavailable);
      co_await answer_status(*connection, s, grpc_status_text(GrpcStatus::unavailable),
                             "the limiter store is unavailable", timeout);
      co_return;
    }
    over_limit = decision.outcome == pipeline::Outcome::limited;
    if (decision.hold > limiter::Duration::zero()) {
      // Delay mode, as for a forward-auth check: the answer waits (Envoy's timeout must allow
      // it); a caller gone meanwhile is answered nothing.
      io::Timer hold(co_await net::this_coro::executor, decision.hold);
      co_await hold.async_wait(io::use_nothrow);
    }
    store.release(loop.index, decision);
    if (s.closed) {
      co_return;
    }
  }
  counters.count(over_limit ? RlsResult::over_limit
                 : prepared == pipeline::DescriptorsPrepared::unknown_domain
                     ? RlsResult::unknown_domain
                     : RlsResult::ok);
  write_response(scratch, decision, over_limit, config.limits_headers);
  rls::encode_response(scratch.response, scratch.framed);
  FieldList& fields = connection->response_fields();
  fields.clear();
  fields.set_status(200);
  fields.add("content-type", "application/grpc");
  scratch.trailers.clear();
  scratch.trailers.add("grpc-status", "0");
  s.discard_body = true;
  s.out = std::span<const char>(scratch.framed.data(), scratch.framed.size());
  s.out_done = true;
  s.trailers = &scratch.trailers.list();
  connection->session().respond(s, fields.list(), true);
  connection->flush();
  co_await await_close(*connection, s, timeout);  // the message is lent until it is sent
}

}  // namespace sluice::http::h2
