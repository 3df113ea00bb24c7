#include "proxy/cost/usage_request.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace sluice::cost {

std::optional<std::string> with_usage_requested(std::string_view request_body) {
  if (request_body.size() > kMaxRewrittenRequest) {
    return std::nullopt;
  }
  boost::json::error_code ec;
  boost::json::value body = boost::json::parse(request_body, ec);
  if (ec || !body.is_object()) {
    return std::nullopt;
  }
  boost::json::object& request = body.get_object();
  const boost::json::value* stream = request.if_contains("stream");
  if (stream == nullptr || !stream->is_bool() || !stream->get_bool()) {
    return std::nullopt;
  }
  boost::json::value& options = request["stream_options"];
  if (options.is_null()) {
    options = boost::json::object();
  }
  if (!options.is_object()) {
    return std::nullopt;  // the upstream refuses such a request: not the proxy's to mend
  }
  boost::json::value& include_usage = options.get_object()["include_usage"];
  if (include_usage.is_bool() && include_usage.get_bool()) {
    return std::nullopt;
  }
  include_usage = true;
  return boost::json::serialize(body);
}

}  // namespace sluice::cost
