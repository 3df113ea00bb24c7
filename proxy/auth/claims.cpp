#include "proxy/auth/claims.hpp"

#include <array>
#include <charconv>

namespace sluice::auth {

const boost::json::value* find_claim(const boost::json::object& claims, std::string_view path) {
  if (const boost::json::value* whole = claims.if_contains(path)) {
    return whole;
  }
  for (std::size_t dot = path.find('.'); dot != std::string_view::npos;
       dot = path.find('.', dot + 1)) {
    const boost::json::value* step = claims.if_contains(path.substr(0, dot));
    if (step != nullptr && step->is_object()) {
      if (const boost::json::value* found = find_claim(step->get_object(), path.substr(dot + 1))) {
        return found;
      }
    }
  }
  return nullptr;
}

bool append_claim_text(const boost::json::value& claim, std::string& out) {
  std::array<char, 32> digits;
  std::to_chars_result written{};
  switch (claim.kind()) {
    case boost::json::kind::string:
      out += std::string_view(claim.get_string());
      return true;
    case boost::json::kind::bool_:
      out += claim.get_bool() ? "true" : "false";
      return true;
    case boost::json::kind::int64:
      written = std::to_chars(digits.begin(), digits.end(), claim.get_int64());
      break;
    case boost::json::kind::uint64:
      written = std::to_chars(digits.begin(), digits.end(), claim.get_uint64());
      break;
    case boost::json::kind::double_:
      written = std::to_chars(digits.begin(), digits.end(), claim.get_double());
      break;
    default:
      return false;
  }
  out.append(digits.data(), written.ptr);
  return true;
}

}  // namespace sluice::auth
