#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "proxy/http/client_connection.hpp"
#include "proxy/http/forward_auth.hpp"
#include "proxy/http/loop_context.hpp"
#include "proxy/http/request_head.hpp"
#include "proxy/http/response_cost.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/live/generation.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// Why an upstream exchange failed, for the 502/504 and `sluice_upstream_errors_total`.
enum class UpstreamFailure { none, connect, timeout, broken };
std::string_view name_of(UpstreamFailure failure) noexcept;

/// How relaying a request to its upstream and the response back ended.
struct RelayOutcome {
  bool keep_alive = false;  ///< The client connection may serve another request.
  unsigned status = 0;      ///< The status the client got; 0 if it went away first.
  UpstreamFailure failure = UpstreamFailure::none;
  /// The client has had no response yet, and serve_exchange answers it with this (502 or 504
  /// for an upstream that failed before its response head, 400 for a request body found
  /// malformed once its head went upstream); `unknown` when the relay answered.
  http::status answer = http::status::unknown;
  limiter::Duration upstream_time{};  ///< From sending the request to the response header.
};

/// A relay whose upstream failed before its response head: serve_exchange answers 502, or 504
/// when it was too slow.
RelayOutcome failed_before_response(UpstreamFailure failure) noexcept;

/// One request and its response: what the pipeline decided, and what the relay and the
/// accounting need to know of it. Lives in the codec's frame for one request; what it refers to,
/// in the connection's (or the stream's) RequestState. The charges the store counts are the
/// decision's scratch, borrowed from the loop (ChargeWork) while serve_exchange decides.
struct Exchange {
  const live::Generation&
      generation;              ///< The configuration the request is served with, to the end.
  const RequestHead& request;  ///< Its head; its body still with the codec.
  pipeline::Decision& decision;
  /// The client connection may serve another request after it (HTTP/1.1); the codec sets it
  /// before the exchange and when it answers.
  bool keep_alive = false;
  std::chrono::steady_clock::time_point started;
  /// Reads the response's cost, when charges wait for it (SPEC §9): the relay begins it with
  /// the response head as `meter` says, and shows it the body.
  ResponseCost* cost = nullptr;
  const cost::MeterSpec* meter = nullptr;
  /// Once settled: what the response was charged (nullopt: no charge waited for it), and why
  /// what it said could not be used, if so (for the access log).
  std::optional<limiter::Permits> charged_cost{};
  std::string_view cost_problem{};
  /// On the decision service's listener (SPEC §11): the request this one describes, decided in
  /// its place; nothing is forwarded. Null for a request to forward.
  const DescribedRequest* described = nullptr;

  /// Begins reading the response's cost with its head (`head`: anything with value_of(name)),
  /// before the relay writes the client's head: a cost the head says is shown in that head's
  /// RateLimit fields (charged_in_head()).
  template <class Head>
  void begin_cost(const Head& head, unsigned status) const {
    if (cost != nullptr) {
      cost->begin(*meter, head);
      if (const auto said = cost->cost_in_head()) {
        charged_in_head(status, *said);
      }
    }
  }
  /// Counts what the response (of `status`) will be charged, `head_cost` as its head says, in the
  /// statuses of the charges that wait for it: the client's RateLimit fields then say what remains
  /// after the charge, as far as this replica knows at admission. The charge itself waits for
  /// the response's end, as every charge after the response does. (Const as the relays hold
  /// the exchange: the decision is the request state's.)
  void charged_in_head(unsigned status, limiter::Permits head_cost) const;

  const config::ProxyConfig& config() const noexcept { return *generation.config; }
  /// The route's upstream, or the default one (see has_upstream()).
  const config::Upstream& upstream() const noexcept {
    return decision.route->upstream ? *decision.route->upstream : *config().upstream;
  }
  /// Whether there is one: a configuration with a decision service may have none.
  bool has_upstream() const noexcept { return decision.route->upstream || config().upstream; }
  /// On the decision service: whether the described request may pass (200). Admitted on a
  /// route that does not answer itself, or on no route at all: what no route limits passes.
  bool admits_described() const noexcept {
    return decision.outcome == pipeline::Outcome::no_route || forwards();
  }
  /// Whether the request goes upstream: admitted (at once or after a hold) on a route that does
  /// not answer itself.
  bool forwards() const noexcept {
    return (decision.outcome == pipeline::Outcome::allowed ||
            decision.outcome == pipeline::Outcome::delayed) &&
           !decision.route->respond;
  }
};

/// The client side of an exchange, as its codec serves it: the HTTP/1.1 connection, an HTTP/2
/// stream, and later the decision service. serve_exchange knows no codec: it asks this.
class Downstream {
 public:
  /// The request as the pipeline sees it.
  virtual pipeline::RequestView request_view() const noexcept = 0;
  /// Whether the client went away while the request was decided or held (an HTTP/2 reset):
  /// then nothing is answered, relayed or counted.
  virtual bool gone() const noexcept { return false; }
  /// Whether some of the request's body has not been read: an answer that leaves it unread
  /// ends an HTTP/1.1 connection (the rest would be taken for the next request).
  virtual bool body_unread() const noexcept { return false; }
  /// Where serve_exchange writes the proxy's own answers (429, 403, 404, a route's `respond`,
  /// 502, 504), as HTTP/1.1 text; the codec sends it in its own encoding.
  virtual OwnResponse& own() = 0;
  /// Sends own() as far as it goes without waiting: true when it is all out (the hot refusal
  /// path needs no coroutine frame), else send_own() finishes it. Either sets
  /// `exchange.keep_alive`.
  virtual bool send_own_now(Exchange& exchange) = 0;
  virtual io::Awaitable<void> send_own(Exchange& exchange) = 0;
  /// Relays the request to its upstream and the response back.
  virtual io::Awaitable<RelayOutcome> relay(Exchange& exchange) = 0;
  /// Where the response's cost is read, kept with the request's state.
  virtual ResponseCost& response_cost() = 0;

 protected:
  ~Downstream() = default;
};

/// One request through the proxy, whatever its codec: the pipeline decides it (the store
/// counts its charges, at once when it can), a delay holds it, then the proxy answers it or
/// relays it; once the response is over, or the client has gone, its concurrency permits go back
/// and it is counted in the metrics and the access log. Where identity (at admission) and cost
/// (at the response's end) plug in.
io::Awaitable<void> serve_exchange(Downstream& downstream, Exchange& exchange, LoopContext& loop);

}  // namespace sluice::http
