#include "proxy/http/request_rewrite.hpp"

#include <algorithm>

#include "proxy/cost/usage_request.hpp"
#include "proxy/http/http1_body.hpp"
#include "proxy/http/relay_heads.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http {
namespace {

/// `application/json`, whatever its case, parameters and spaces.
bool is_json(std::string_view content_type) noexcept {
  const std::string_view media_type =
      pipeline::trim_whitespace(content_type.substr(0, content_type.find(';')));
  return pipeline::equal_ignoring_case(media_type, "application/json");
}

}  // namespace

bool RequestRewrite::wanted(const config::Route& route, const RequestHead& request) noexcept {
  if (!route.cost_from || !route.cost_from->include_usage) {
    return false;
  }
  if (!request.chunked && (!request.content_length || *request.content_length == 0 ||
                           *request.content_length > cost::kMaxRewrittenRequest)) {
    return false;
  }
  return is_json(request.head().value_of(http::field::content_type));
}

io::Awaitable<void> RequestRewrite::hold(const RequestHead& request, BodySource& source,
                                         telemetry::Metrics& metrics) {
  source_ = &source;
  head_ = request;
  if (request.content_length) {
    held_.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(*request.content_length, cost::kMaxRewrittenRequest)));
  }
  for (;;) {
    BodyPiece piece;
    beast::error_code ec;
    if (!source.next_now(piece, ec)) {
      ec = co_await source.next(piece);
    }
    if (ec) {
      error_ = ec;
      co_return;
    }
    if (held_.size() + piece.bytes.size() > cost::kMaxRewrittenRequest) {
      pending_ = piece;  // goes on as it came, after what was held
      has_pending_ = true;
      co_return;
    }
    held_.append(piece.bytes.data(), piece.bytes.size());
    source.taken(piece.bytes.size());
    if (piece.last) {
      trailers_ = piece.trailers;
      break;
    }
  }
  whole_ = true;
  if (trailers_ != nullptr) {
    co_return;  // a Content-Length would leave no room for them: as it came
  }
  if (std::optional<std::string> body = cost::with_usage_requested(held_)) {
    held_ = std::move(*body);
    rewritten_ = true;
    head_.content_length = held_.size();
    head_.chunked = false;
    metrics.count_usage_requested();
  }
}

bool RequestRewrite::next_now(BodyPiece& piece, beast::error_code& ec) {
  lent_by_source_ = false;
  if (stage_ == Stage::held) {
    stage_ = Stage::after_held;
    if (whole_ || !held_.empty()) {
      piece = BodyPiece{.bytes = held_, .last = whole_, .trailers = trailers_};
      return true;
    }
  }
  if (stage_ == Stage::after_held) {
    stage_ = Stage::rest;
    if (error_) {
      ec = error_;
      return true;
    }
    if (has_pending_) {
      piece = pending_;
      lent_by_source_ = true;
      return true;
    }
  }
  lent_by_source_ = true;
  return source_->next_now(piece, ec);
}

io::Awaitable<beast::error_code> RequestRewrite::next(BodyPiece& piece) {
  lent_by_source_ = true;
  return source_->next(piece);
}

void RequestRewrite::taken(std::size_t count) noexcept {
  if (lent_by_source_) {
    source_->taken(count);
  }
}

io::Awaitable<HeldRequestBody> hold_http1_request_body(io::Stream& client,
                                                       const config::Route& route,
                                                       const RequestHead& request, BodySource& body,
                                                       limiter::Duration timeout,
                                                       telemetry::Metrics& metrics) {
  HeldRequestBody held;
  if (!RequestRewrite::wanted(route, request)) {
    co_return held;
  }
  if (expects_continue(request)) {
    if (co_await send_continue(client, timeout)) {
      held.client_gone = true;
      co_return held;
    }
    held.continued = true;
  }
  held.rewrite = std::make_unique<RequestRewrite>();
  co_await held.rewrite->hold(request, body, metrics);
  co_return held;
}

}  // namespace sluice::http
