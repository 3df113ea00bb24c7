#include "proxy/admin/admin_response.hpp"

#include <array>
#include <boost/json/serialize.hpp>
#include <charconv>

#include "proxy/http/responses.hpp"

namespace sluice::admin {

std::string percent_decoded(std::string_view text) {
  const auto hex = [](char c) -> int {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = hex(text[i + 1]);
      const int low = hex(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

std::string hashed_key_text(limiter::KeyHash key) {
  std::string text = "hash:0000000000000000";
  std::array<char, 16> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), key, 16).ptr;
  const auto length = static_cast<std::size_t>(end - digits.data());
  text.replace(text.size() - length, length, digits.data(), length);
  return text;
}

AdminResponse text_response(const AdminRequest& request, http::status status, std::string body,
                            std::string_view type) {
  AdminResponse response{status, request.version};
  response.set(http::field::content_type, type);
  response.body() = std::move(body);
  response.keep_alive(request.keep_alive);
  response.prepare_payload();
  return response;
}

AdminResponse json_response(const AdminRequest& request, http::status status,
                            const boost::json::object& body) {
  return text_response(request, status, boost::json::serialize(body) + "\n", "application/json");
}

AdminResponse problem(const AdminRequest& request, http::status status, std::string_view detail) {
  if (detail.empty()) {
    http::ResponseText body;
    http::write_problem(body, status);
    return text_response(request, status, fmt::to_string(body), "application/problem+json");
  }
  const boost::json::object body{{"type", "about:blank"},
                                 {"title", std::string(http::obsolete_reason(status))},
                                 {"status", static_cast<unsigned>(status)},
                                 {"detail", detail}};
  return text_response(request, status, boost::json::serialize(body) + "\n",
                       "application/problem+json");
}

}  // namespace sluice::admin
