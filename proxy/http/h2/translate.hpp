#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/h2/session.hpp"
#include "proxy/http/header_text.hpp"
#include "proxy/http/relay_heads.hpp"

namespace sluice::http::h2 {

/// Header fields for nghttp2, made from HTTP/1.1 heads (as the proxy's own answers and the
/// relay write them): pseudo-header fields first, names in lower case, and without the fields
/// that belong to one HTTP/1.1 connection (RFC 9113 §8.2.2). Its storage is kept from one
/// message to the next.
class FieldList {
 public:
  /// A response's: `head` is a status line, field lines and a blank line; `skip` names fields
  /// (in lower case) to leave out besides the connection-specific ones.
  void read(std::string_view head, std::initializer_list<std::string_view> skip = {});
  /// Forgets every field and the status (trailers have none).
  void clear() noexcept;
  /// Adds a field; `name` in lower case.
  void add(std::string_view name, std::string_view value);
  /// Adds the field lines of `lines` (`Name: value\r\n` each, up to a blank line or the end).
  void add_lines(std::string_view lines);
  /// Adds a field of an HTTP/1.1 head: its name in lower case; left out if it belongs to one
  /// HTTP/1.1 connection, or is Host (:authority in HTTP/2).
  void add_http1(std::string_view name, std::string_view value);
  /// Leaves out the fields whose name `drop` picks.
  template <class Predicate>
  void erase_if(Predicate drop) {
    std::erase_if(fields_, [&](const Field& field) {
      return drop(std::string_view(text_.data() + field.name, field.name_length));
    });
  }
  /// Sets :status, which then comes first.
  void set_status(unsigned status);
  unsigned status() const noexcept { return status_; }
  /// The first field with this name (case-insensitive), or "".
  std::string_view value_of(std::string_view name) const noexcept;
  /// The fields for nghttp2 (valid until the next change).
  const std::vector<nghttp2_nv>& list();

 private:
  struct Field {
    std::size_t name, name_length, value, value_length;
  };
  /// Adds the field lines of `lines` (each `Name: value\r\n`) up to a blank line or the end.
  void read_fields(std::string_view lines, std::initializer_list<std::string_view> skip);
  /// Adds a field, its name lower-cased, unless it is connection-specific or in `skip`.
  void add_lowered(std::string_view name, std::string_view value,
                   std::initializer_list<std::string_view> skip);

  std::string text_;
  std::vector<Field> fields_;
  std::vector<nghttp2_nv> list_;
  unsigned status_ = 0;
  std::array<char, 3> status_text_{};
};

/// A relayed head as HTTP/2 fields, into `fields`: pseudo-header fields first (a request's Host
/// field as :authority), names in lower case, without the fields that belong to one HTTP/1.1
/// connection. `scheme`: a request's :scheme.
class FieldListOut final : public HeadOut {
 public:
  explicit FieldListOut(FieldList& fields, std::string_view scheme = {}) noexcept
      : fields_(fields), scheme_(scheme) {}
  void request(std::string_view method, std::string_view target,
               std::string_view authority) override;
  void response(unsigned version, unsigned status, std::string_view reason) override;
  void field(std::string_view name, std::string_view value) override;
  void lines(std::string_view text) override { fields_.add_lines(text); }
  void end() override {}

 private:
  FieldList& fields_;
  std::string_view scheme_;
};

/// grpc-message's value: percent-encoded as gRPC's HTTP/2 protocol asks (bytes outside
/// printable ASCII, and `%`).
std::string grpc_message(std::string_view text);

}  // namespace sluice::http::h2
