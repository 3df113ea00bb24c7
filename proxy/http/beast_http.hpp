#pragma once

#include <boost/beast/http.hpp>

#include "proxy/io/net.hpp"

namespace sluice::http {

/// Beast's HTTP/1 vocabulary, named as this layer's own (`http::status`, `http::field`, ...):
/// the I/O layer below knows only Asio and Beast's core, the layers above speak HTTP through these.
using beast::http::async_read;
using beast::http::async_read_header;
using beast::http::async_read_some;
using beast::http::async_write;
using beast::http::async_write_header;
using beast::http::basic_parser;
using beast::http::buffer_body;
using beast::http::empty_body;
using beast::http::error;
using beast::http::field;
using beast::http::int_to_status;
using beast::http::obsolete_reason;
using beast::http::read;
using beast::http::read_header;
using beast::http::request;
using beast::http::request_parser;
using beast::http::response;
using beast::http::response_parser;
using beast::http::response_serializer;
using beast::http::status;
using beast::http::string_body;
using beast::http::string_to_field;
using beast::http::string_to_verb;
using beast::http::verb;
using beast::http::write;

}  // namespace sluice::http
