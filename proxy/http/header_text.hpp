#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace sluice::http {

/// An HTTP/1.1 message head written as text, straight into a buffer: no field container in
/// between, and inline storage for a typical head, so writing one needs no heap.
using HeadText = fmt::basic_memory_buffer<char, 1024>;

/// Appends `text` to any fmt buffer (a head, a body).
template <std::size_t Size>
void append(fmt::basic_memory_buffer<char, Size>& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

/// Makes `head` `count` characters longer and returns where they start, for a line written
/// in one piece: one size check per line rather than one per part of it.
inline char* extend(HeadText& head, std::size_t count) {
  const std::size_t at = head.size();
  head.resize(at + count);
  return head.data() + at;
}

/// Copies `text` to `out`; returns the end of the copy.
inline char* put_text(char* out, std::string_view text) noexcept {
  return std::copy(text.begin(), text.end(), out);
}

/// Appends `value` in decimal.
template <std::size_t Size>
void append_number(fmt::basic_memory_buffer<char, Size>& out, std::uint64_t value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

/// HTTP versions as Beast counts them (major × 10 + minor). The HTTP/2 layer writes its
/// streams' answers as HTTP/1.1 heads, which its FieldList reads into fields.
inline constexpr unsigned kHttp10 = 10;
inline constexpr unsigned kHttp11 = 11;

/// `METHOD TARGET HTTP/1.1`: the upstream always hears HTTP/1.1.
inline void write_request_line(HeadText& head, std::string_view method, std::string_view target) {
  static constexpr std::string_view kVersion = " HTTP/1.1\r\n";
  char* out = extend(head, method.size() + 1 + target.size() + kVersion.size());
  out = put_text(out, method);
  *out++ = ' ';
  put_text(put_text(out, target), kVersion);
}

inline void write_field(HeadText& head, std::string_view name, std::string_view value) {
  char* out = extend(head, name.size() + value.size() + 4);
  out = put_text(out, name);
  *out++ = ':';
  *out++ = ' ';
  out = put_text(out, value);
  *out++ = '\r';
  *out = '\n';
}

inline void write_field(HeadText& head, std::string_view name, std::uint64_t value) {
  const fmt::format_int text(value);
  write_field(head, name, std::string_view(text.data(), text.size()));
}

/// `HTTP/1.x STATUS REASON`; `version` as Beast counts it (10, 11).
inline void write_status_line(HeadText& head, unsigned version, unsigned status,
                              std::string_view reason) {
  append(head, version >= kHttp11 ? "HTTP/1.1 " : "HTTP/1.0 ");
  append_number(head, status);
  append(head, " ");
  append(head, reason);
  append(head, "\r\n");
}

/// The Connection field a response needs for the client's version to mean `keep_alive`.
inline void write_persistence(HeadText& head, unsigned version, bool keep_alive) {
  if (version >= kHttp11 && !keep_alive) {
    append(head, "Connection: close\r\n");
  } else if (version < kHttp11 && keep_alive) {
    append(head, "Connection: keep-alive\r\n");
  }
}

/// The blank line that ends a head.
inline void end_head(HeadText& head) { append(head, "\r\n"); }

}  // namespace sluice::http
