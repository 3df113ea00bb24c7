#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "config/proxy_config.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/message_parser.hpp"
#include "proxy/http/request_head.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::http {

/// Where a relayed head is written: HTTP/1.1 text for an HTTP/1.1 peer (HeadTextOut), a field
/// list for an HTTP/2 one (h2::FieldListOut). What passes between codecs is fields, never text
/// to be parsed again.
class HeadOut {
 public:
  /// A request head's start: its method and target, and its authority (the Host field's
  /// value, which also comes as a field).
  virtual void request(std::string_view method, std::string_view target,
                       std::string_view authority) = 0;
  /// A response head's start.
  virtual void response(unsigned version, unsigned status, std::string_view reason) = 0;
  virtual void field(std::string_view name, std::string_view value) = 0;
  /// Field lines the proxy wrote itself (`Name: value\r\n` each): its limit fields, the framing.
  virtual void lines(std::string_view text) = 0;
  /// Last: the head is whole.
  virtual void end() = 0;

 protected:
  ~HeadOut() = default;
};

/// A head as HTTP/1.1 text.
class HeadTextOut final : public HeadOut {
 public:
  explicit HeadTextOut(HeadText& head) noexcept : head_(head) {}
  void request(std::string_view method, std::string_view target, std::string_view) override {
    write_request_line(head_, method, target);
  }
  void response(unsigned version, unsigned status, std::string_view reason) override {
    write_status_line(head_, version, status, reason);
  }
  void field(std::string_view name, std::string_view value) override {
    write_field(head_, name, value);
  }
  void lines(std::string_view text) override { append(head_, text); }
  void end() override { end_head(head_); }

 private:
  HeadText& head_;
};

/// The request head as the upstream gets it: HTTP/1.1, persistent, end-to-end fields only, plus
/// the forwarding fields (the proxy's replace the client's, but X-Forwarded-For is appended
/// to) and the framing: one Content-Length, or chunked. `Expect` is dropped: the proxy has
/// answered it. On a route with `auth`, the fields its provider's `claims_to_headers` name carry
/// the verified claims, never the client's copies.
void write_upstream_head(const RequestHead& request, const pipeline::Authentication& auth,
                         std::string_view client_address, bool secure, bool upgrade, HeadOut& out);
/// The same as HTTP/1.1 text.
void write_upstream_head(const RequestHead& request, const pipeline::Authentication& auth,
                         std::string_view client_address, bool secure, bool upgrade,
                         HeadText& head);

/// How a response's body goes to the client, and the fields that say so.
struct ClientFraming {
  bool chunked = false;  ///< Re-chunked by the proxy.
  bool codings = false;  ///< The upstream's Transfer-Encoding fields go as they are: codings
                         ///< besides chunked, either last (re-chunked) or not (until close).
  std::optional<std::uint64_t> length;  ///< Content-Length.
};

/// The response head as the client gets it: its own HTTP version, the upstream's end-to-end
/// fields, the proxy's limit fields (in place of any the upstream sent) and the framing the
/// body is re-sent in.
void write_client_head(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, HeadOut& out);
/// The same as HTTP/1.1 text.
void write_client_head(const ResponseParser& response, unsigned version, ClientFraming framing,
                       bool keep_alive, bool switching, const pipeline::Decision& decision,
                       config::LimitsHeaders limits_headers, HeadText& head);

/// Room for a chunk's size line: up to 16 hex digits and CRLF.
using ChunkSizeLine = std::array<char, 24>;

/// Puts `piece` of a body into `pieces` from `count` on, in its chunk framing (size line, the
/// bytes, CRLF) when `chunked`, else as it is; nothing for an empty piece. The size line is
/// written into `size_line`, which must outlive the send. Returns the new count.
inline std::size_t add_body_piece(std::span<net::const_buffer> pieces, std::size_t count,
                                  std::string_view piece, bool chunked, ChunkSizeLine& size_line) {
  if (piece.empty()) {
    return count;
  }
  if (chunked) {
    const auto end = fmt::format_to(size_line.data(), "{:x}\r\n", piece.size());
    pieces[count++] =
        net::buffer(size_line.data(), static_cast<std::size_t>(end - size_line.data()));
  }
  pieces[count++] = net::buffer(piece.data(), piece.size());
  if (chunked) {
    pieces[count++] = net::buffer("\r\n", 2);
  }
  return count;
}

/// Whether the client waits for a 100 (Continue) before it sends the body; an HTTP/1.0 client
/// does not know interim responses, and its expectation is ignored (RFC 9110 §10.1.1).
bool expects_continue(const RequestHead& request);

/// RFC 9110 §9.2.2: methods whose effect is the same if a request is made once or more (one
/// that failed on a kept-alive upstream connection may be sent again on a new one).
bool idempotent(http::verb method) noexcept;

/// The verified claims the route's provider names in `claims_to_headers` (SPEC §8), as fields
/// of `head`: the decision service's admitted answer carries them for the gateway to pass on.
void write_claim_lines(HeadText& head, const pipeline::Authentication& auth);

}  // namespace sluice::http
