#include "proxy/admin/admin_auth.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

namespace sluice::admin {

bool same_secret(std::string_view given, std::string_view expected) noexcept {
  // Every byte of `given` is looked at whatever differs, and the lengths are compared alike.
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    const char wanted = expected.empty() ? '\0' : expected[i % expected.size()];
    difference |= static_cast<unsigned char>(given[i] ^ wanted);
  }
  return difference == 0;
}

bool loopback_host(std::string_view host) noexcept {
  if (host == "localhost") {
    return true;
  }
  boost::system::error_code error;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, error);
  return !error && address.is_loopback();
}

std::optional<AdminResponse> refuse_write(const AdminRequest& request,
                                          const config::ProxyConfig& config) {
  if (config.admin_token.empty()) {
    if (config.admin && loopback_host(config.admin->host)) {
      return std::nullopt;
    }
    return problem(request, http::status::forbidden,
                   "writes on an admin port that is not on a loopback address need admin_token "
                   "to be set");
  }
  const auto header = request.message.find(http::field::authorization);
  std::string_view given;
  if (header != request.message.end()) {
    given = std::string_view(header->value().data(), header->value().size());
  }
  constexpr std::string_view kScheme = "Bearer ";
  const bool bearer =
      given.size() > kScheme.size() && beast::iequals(given.substr(0, kScheme.size()), kScheme);
  if (bearer && same_secret(given.substr(kScheme.size()), config.admin_token)) {
    return std::nullopt;
  }
  AdminResponse refusal =
      problem(request, http::status::unauthorized,
              bearer ? "the bearer token is not the admin_token"
                     : "writes need Authorization: Bearer with the admin_token");
  refusal.set(http::field::www_authenticate, "Bearer");
  return refusal;
}

}  // namespace sluice::admin
