#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <cstddef>
#include <memory>
#include <optional>

#include "proxy/http/head_fields.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/response_cost.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/io/spare_pool.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// What a client connection needs only while it serves requests: the bytes read and not yet
/// parsed, the head and its parser, the limiters' decision and the answer's text, about 6 KB.
/// A connection borrows one from its loop's RequestStatePool when a request's first bytes
/// arrive and gives it back when it has answered every request it read and holds no byte of
/// another, so that a connection waiting for its next request keeps none of it (as nginx gives
/// its buffers back on an idle keep-alive connection).
struct RequestState {
  /// A buffer that grew past this (a large head) is given back with the state.
  static constexpr std::size_t kKeptBufferBytes = 4096;

  boost::beast::flat_buffer buffer{kMaxHeaderBytes};  ///< Read from the client, not yet parsed.
  HeadFields request_head;                            ///< The current request's fields.
  std::optional<RequestParser> parser;                ///< The current request's; one per request.
  pipeline::Decision decision;
  pipeline::Charges charges;
  pipeline::ChargeResult charged;
  OwnResponse own;      ///< An answer the proxy gives itself.
  HeadText relay_head;  ///< The heads of a relayed request and its response.
  /// Made for the first request whose route reads a cost from its response, then kept.
  std::unique_ptr<ResponseCost> cost;

  ResponseCost& response_cost() {
    if (!cost) {
      cost = std::make_unique<ResponseCost>();
    }
    return *cost;
  }

  /// Forgets the last connection's request, keeping only the usual storage (SparePool calls it).
  void recycle() noexcept {
    parser.reset();
    request_head.trim();
    buffer.clear();
    if (buffer.capacity() > kKeptBufferBytes) {
      buffer.shrink_to_fit();
    }
  }
};

/// One event loop's spare request states.
using RequestStatePool = io::SparePool<RequestState>;

}  // namespace sluice::http
