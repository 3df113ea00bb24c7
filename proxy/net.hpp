#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "proxy/recycling_allocator.hpp"

namespace sluice::proxy {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// Completion token for coroutines on the request path, where end of stream, timeouts and resets
/// are normal outcomes: they come back as values, not exceptions.
/// Header fields on the request path: their blocks are recycled per event loop.
using Fields = http::basic_fields<RecyclingAllocator<char>>;
using RequestParser = http::request_parser<http::buffer_body, RecyclingAllocator<char>>;
using ResponseParser = http::response_parser<http::buffer_body, RecyclingAllocator<char>>;

inline constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);

}  // namespace sluice::proxy
