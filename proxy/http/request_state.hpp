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
/// parsed, the head and its parser, the limiters' decision and the relayed heads' text, about
/// 3.5 KB (a size the allocator rounds to 4 KB).
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
  HeadText relay_head;  ///< The heads of a relayed request and its response.
  /// Made for the first request whose route reads a cost from its response, then kept.
  std::unique_ptr<ResponseCost> cost;
  /// Made for the first answer the proxy gives itself, then kept: a request that is relayed,
  /// the one that waits longest, holds none (its 1.6 KB of text).
  std::unique_ptr<OwnResponse> own_response;

  /// Where an answer the proxy gives itself is written (429, 403, 404, 400, 502, ...).
  OwnResponse& own() {
    if (!own_response) {
      own_response = std::make_unique<OwnResponse>();
    }
    return *own_response;
  }

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

// Every request in flight holds a state (an HTTP/2 connection's hundred streams waiting for a
// slow upstream, each): jemalloc's size classes step from 3,584 to 4,096 bytes here, so a state
// a byte larger costs 512 bytes more per request (bench/http2.sh's memory test).
static_assert(sizeof(RequestState) <= 3584, "a request state fits jemalloc's 3.5 KiB class");

/// One event loop's spare request states.
using RequestStatePool = io::SparePool<RequestState>;

/// What deciding a request needs until its decision is made, about 1.7 KB: the charges the store
/// counts and its answer. Borrowed from the loop's spares for that time only, so that a request
/// waiting for its upstream (or held by a slow one, an HTTP/2 stream among a hundred) keeps
/// none of it.
struct ChargeWork {
  pipeline::Charges charges;
  pipeline::ChargeResult charged;
};

/// One event loop's spare charge work: as many as requests wait for the store at once.
using ChargeWorkPool = io::SparePool<ChargeWork>;

}  // namespace sluice::http
