#include "proxy/pipeline/request_key.hpp"

#include <arpa/inet.h>
#include <strings.h>

#include <algorithm>
#include <optional>

#include "proxy/auth/claims.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::pipeline {
namespace {

/// The value of the first `name=value` item of `text` (items separated by `separator`).
template <class Visit>
std::optional<std::string_view> find_pair(std::string_view text, char separator,
                                          std::string_view name, Visit trim_item) {
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    const std::string_view item = trim_item(text.substr(start, end - start));
    const std::size_t equals = item.find('=');
    if (item.substr(0, equals) == name) {
      return equals == std::string_view::npos ? std::string_view() : item.substr(equals + 1);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> cookie_value(std::string_view cookies, std::string_view name) {
  return find_pair(cookies, ';', name, trim_whitespace);
}

std::optional<std::string_view> query_value(std::string_view query, std::string_view name) {
  return find_pair(query, '&', name, [](std::string_view item) { return item; });
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  authorization = trim_whitespace(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      strncasecmp(authorization.data(), kScheme.data(), kScheme.size()) != 0) {
    return std::nullopt;
  }
  const std::string_view token = trim_whitespace(authorization.substr(kScheme.size()));
  return token.empty() ? std::nullopt : std::optional(token);
}

bool build_key(const config::KeySpec& spec, unsigned ipv6_prefix, const RequestView& request,
               const IpAddress& client, std::string_view route_name,
               const auth::VerifiedJwt* identity, std::string& out) {
  out.clear();
  using Kind = config::KeyPart::Kind;
  for (const config::KeyPart& part : spec.parts) {
    if (!out.empty()) {
      out += kKeyPartSeparator;
    }
    switch (part.kind) {
      case Kind::ip:
        (client.ipv4 ? client : client.masked(ipv6_prefix)).append_to(out);
        break;
      case Kind::header: {
        const Header* header = request.find_header(part.name);
        if (header == nullptr) {
          return false;
        }
        out += header->value;
        break;
      }
      case Kind::bearer: {
        const std::optional<std::string_view> token = bearer_token(request.header("Authorization"));
        if (!token) {
          return false;
        }
        out += *token;
        break;
      }
      case Kind::cookie: {
        const std::optional<std::string_view> value =
            cookie_value(request.header("Cookie"), part.name);
        if (!value) {
          return false;
        }
        out += *value;
        break;
      }
      case Kind::query: {
        const std::optional<std::string_view> value = query_value(request.query(), part.name);
        if (!value) {
          return false;
        }
        out += *value;
        break;
      }
      case Kind::route:
        out += route_name;
        break;
      case Kind::jwt: {
        const boost::json::value* claim =
            identity != nullptr ? auth::find_claim(identity->claims, part.name) : nullptr;
        if (claim == nullptr || !auth::append_claim_text(*claim, out)) {
          return false;
        }
        break;
      }
      case Kind::global:
        out += '*';
        break;
      case Kind::cert_subject:
      case Kind::cert_san:
      case Kind::cert_fingerprint: {
        const ClientCertificate* certificate = request.certificate;
        const std::string_view value = certificate == nullptr            ? std::string_view()
                                       : part.kind == Kind::cert_subject ? certificate->subject
                                       : part.kind == Kind::cert_san     ? certificate->san
                                                                         : certificate->fingerprint;
        if (value.empty()) {
          return false;
        }
        out += value;
        break;
      }
    }
  }
  return true;
}

}  // namespace sluice::pipeline
