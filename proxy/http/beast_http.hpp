#pragma once

#include <boost/beast/http.hpp>

#include "proxy/io/net.hpp"

namespace sluice::proxy {

/// Beast's HTTP/1 vocabulary (status codes, fields, error codes) for the HTTP layer; the I/O
/// layer below it knows only Asio and Beast's core.
namespace http = beast::http;

}  // namespace sluice::proxy
