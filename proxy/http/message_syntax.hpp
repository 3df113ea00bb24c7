#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "proxy/pipeline/http_text.hpp"
#include "proxy/pipeline/ip_address.hpp"

namespace sluice::http {

/// The HTTP/1.1 grammar (RFC 9110, RFC 9112) that Beast's parser does not check and the strict
/// checks of MessageParser need: text in, a verdict out, nothing allocated.
namespace syntax {

/// tchar (RFC 9110 §5.6.2): the characters of a token.
inline bool is_tchar(char c) noexcept {
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
}

inline bool is_hex_digit(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// unreserved / sub-delims (RFC 3986 §2): what a reg-name may hold besides percent-encodings.
inline bool is_host_char(char c) noexcept {
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
      return true;
    default:
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
}

/// Host = uri-host [ ":" port ] (RFC 9110 §7.2), uri-host an IP-literal in brackets, an IPv4
/// address or a reg-name (RFC 3986 §3.2.2), port digits. Empty is valid: a target URI without
/// an authority is sent with an empty Host.
inline bool valid_host(std::string_view host) noexcept {
  std::size_t at = 0;
  if (!host.empty() && host.front() == '[') {
    // IP-literal: an IPv6 address, or IPvFuture ("v" 1*HEXDIG "." ...), which no one uses.
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos || close == 1) {
      return false;
    }
    const std::string_view literal = host.substr(1, close - 1);
    if (literal.front() == 'v' || literal.front() == 'V') {
      for (const char c : literal) {
        if (!is_host_char(c) && c != ':') {
          return false;
        }
      }
    } else if (const auto address = pipeline::IpAddress::parse(literal);
               !address || address->ipv4) {
      return false;
    }
    at = close + 1;
  } else {
    while (at < host.size() && host[at] != ':') {
      if (host[at] == '%') {
        if (at + 2 >= host.size() || !is_hex_digit(host[at + 1]) || !is_hex_digit(host[at + 2])) {
          return false;
        }
        at += 3;
        continue;
      }
      if (!is_host_char(host[at])) {
        return false;
      }
      ++at;
    }
  }
  if (at == host.size()) {
    return true;
  }
  if (host[at] != ':') {
    return false;
  }
  for (++at; at < host.size(); ++at) {
    if (host[at] < '0' || host[at] > '9') {
      return false;
    }
  }
  return true;
}

/// Moves `at` past the whitespace (SP, HTAB) that starts there.
inline void skip_whitespace(std::string_view text, std::size_t& at) noexcept {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) {
    ++at;
  }
}

/// The token (RFC 9110 §5.6.2) that starts at `at`, and `at` past it; empty if there is none.
inline std::string_view take_token(std::string_view text, std::size_t& at) noexcept {
  const std::size_t start = at;
  while (at < text.size() && is_tchar(text[at])) {
    ++at;
  }
  return text.substr(start, at - start);
}

/// Moves `at` past the quoted-string that starts there; false if it is not one (RFC 9110
/// §5.6.4: qdtext and quoted-pair, no control characters).
inline bool skip_quoted_string(std::string_view text, std::size_t& at) noexcept {
  for (++at; at < text.size(); ++at) {
    const auto c = static_cast<unsigned char>(text[at]);
    if (c == '"') {
      ++at;
      return true;
    }
    if (c == '\\') {
      if (++at == text.size()) {
        return false;
      }
      const auto escaped = static_cast<unsigned char>(text[at]);
      if ((escaped < 0x20 && escaped != '\t') || escaped == 0x7f) {
        return false;
      }
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return false;
    }
  }
  return false;
}

/// What the Transfer-Encoding fields of a message say (RFC 9112 §6.1), gathered field by field:
///     Transfer-Encoding = #transfer-coding
///     transfer-coding    = token *( OWS ";" OWS token BWS "=" BWS ( token / quoted-string ) )
struct TransferCodings {
  bool present = false;       ///< At least one Transfer-Encoding field.
  bool valid = true;          ///< Every element a transfer-coding; `chunked` without parameters.
  unsigned codings = 0;       ///< How many codings, in all fields.
  unsigned chunked = 0;       ///< How many of them are `chunked`.
  bool ends_chunked = false;  ///< The last one is `chunked`.

  /// The codings say how long the message is: some, `chunked` once and last.
  bool framed_by_chunked() const noexcept {
    return present && valid && chunked == 1 && ends_chunked;
  }
  /// Codings besides `chunked` (gzip, compress, deflate...).
  bool others() const noexcept { return codings > chunked; }

  /// Adds one field's value.
  void add(std::string_view value) noexcept {
    present = true;
    std::size_t at = 0;
    for (;;) {
      // Empty list elements are allowed (RFC 9110 §5.6.1).
      while (at < value.size() && (value[at] == ' ' || value[at] == '\t' || value[at] == ',')) {
        ++at;
      }
      if (at == value.size()) {
        return;
      }
      const std::string_view name = take_token(value, at);
      if (name.empty()) {
        valid = false;
        return;
      }
      const bool is_chunked = pipeline::equal_ignoring_case(name, "chunked");
      ++codings;
      chunked += is_chunked ? 1 : 0;
      ends_chunked = is_chunked;
      skip_whitespace(value, at);
      while (at < value.size() && value[at] == ';') {
        ++at;
        skip_whitespace(value, at);
        if (is_chunked || take_token(value, at).empty()) {  // chunked has no parameters
          valid = false;
          return;
        }
        skip_whitespace(value, at);
        if (at == value.size() || value[at] != '=') {
          valid = false;
          return;
        }
        ++at;
        skip_whitespace(value, at);
        if (at < value.size() && value[at] == '"') {
          if (!skip_quoted_string(value, at)) {
            valid = false;
            return;
          }
        } else if (take_token(value, at).empty()) {
          valid = false;
          return;
        }
        skip_whitespace(value, at);
      }
      if (at < value.size() && value[at] != ',') {
        valid = false;
        return;
      }
    }
  }
};

/// Chunk extensions as Beast hands them over (it checks their grammar, but lets any byte
/// through in a quoted value): none may be a control character other than HTAB. A bare LF
/// there ends the line for some parsers and not others (RFC 9112 §7.1.1, §2.2).
inline bool valid_chunk_extensions(std::string_view extensions) noexcept {
  for (const char c : extensions) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) {
      return false;
    }
  }
  return true;
}

/// A chunk-size line without its CRLF (RFC 9112 §7.1.1):
///     chunk-size [ chunk-ext ]      chunk-size = 1*HEXDIG
///     chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
///     chunk-ext-val = token / quoted-string
inline bool valid_chunk_size_line(std::string_view line) noexcept {
  std::size_t at = 0;
  while (at < line.size() && is_hex_digit(line[at])) {
    ++at;
  }
  if (at == 0) {
    return false;
  }
  for (;;) {
    skip_whitespace(line, at);
    if (at == line.size()) {
      return true;
    }
    if (line[at] != ';') {
      return false;
    }
    ++at;
    skip_whitespace(line, at);
    if (take_token(line, at).empty()) {
      return false;
    }
    skip_whitespace(line, at);
    if (at < line.size() && line[at] == '=') {
      ++at;
      skip_whitespace(line, at);
      if (at < line.size() && line[at] == '"') {
        if (!skip_quoted_string(line, at)) {
          return false;
        }
      } else if (take_token(line, at).empty()) {
        return false;
      }
    }
  }
}

/// Whether a field value holds only what Beast's HTTP/1.1 parser lets through: no control
/// character but HTAB (RFC 9110 §5.5; obs-text, bytes above 0x7F, is kept as Beast keeps it).
/// For values that came another way than through Beast (an HTTP/2 stream's).
inline bool valid_field_value(std::string_view value) noexcept {
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      return false;
    }
  }
  return true;
}

/// Whether every byte of a request-target may be there (RFC 9112 §3.2, RFC 3986 §3.3-3.4): a
/// visible ASCII character (Beast lets bytes above 0x7F through), and no '#': a fragment is no
/// part of a request-target; clients strip it, so one that arrives is a broken client or a probe
/// for a proxy and an upstream that read the path differently (HAProxy refuses it too).
inline bool valid_target_bytes(std::string_view target) noexcept {
  for (const char c : target) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || c == '#') {
      return false;
    }
  }
  return true;
}

/// An absolute-form request-target (RFC 9112 §3.2.2) split for a gateway: its authority, which
/// replaces the Host field, and its path and query, the origin-form the request is routed and
/// forwarded with.
struct AbsoluteForm {
  bool valid = false;  ///< An http or https URI with a valid, non-empty host, no userinfo.
  std::string_view authority;
  std::string_view path;  ///< Path and query; "" for an empty path (sent as "/").
};

inline AbsoluteForm split_absolute_form(std::string_view target) noexcept {
  AbsoluteForm form;
  std::size_t at = 0;
  if (pipeline::equal_ignoring_case(target.substr(0, 7), "http://")) {
    at = 7;
  } else if (pipeline::equal_ignoring_case(target.substr(0, 8), "https://")) {
    at = 8;
  } else {
    return form;
  }
  const std::size_t end = std::min(target.find_first_of("/?#", at), target.size());
  form.authority = target.substr(at, end - at);
  form.path = target.substr(end);
  // A userinfo ("user:password@") is an error (RFC 9110 §4.2.4), an empty host invalid
  // (§4.2.1); a fragment is no part of a request-target.
  form.valid = !form.authority.empty() && form.authority.front() != ':' &&
               valid_host(form.authority) && form.path.find('#') == std::string_view::npos;
  return form;
}

}  // namespace syntax
}  // namespace sluice::http
