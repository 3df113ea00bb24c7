#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace sluice::proxy {

/// An HTTP/1.1 message head written as text, straight into a buffer: no field container in
/// between, and inline storage for a typical head, so writing one needs no heap.
using HeadText = fmt::basic_memory_buffer<char, 1024>;

/// Appends `text` to any fmt buffer (a head, a body).
template <std::size_t Size>
void append(fmt::basic_memory_buffer<char, Size>& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

/// Appends `value` in decimal.
template <std::size_t Size>
void append_number(fmt::basic_memory_buffer<char, Size>& out, std::uint64_t value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

/// `METHOD TARGET HTTP/1.1`: the upstream always hears HTTP/1.1.
inline void write_request_line(HeadText& head, std::string_view method, std::string_view target) {
  append(head, method);
  append(head, " ");
  append(head, target);
  append(head, " HTTP/1.1\r\n");
}

inline void write_field(HeadText& head, std::string_view name, std::string_view value) {
  append(head, name);
  append(head, ": ");
  append(head, value);
  append(head, "\r\n");
}

inline void write_field(HeadText& head, std::string_view name, std::uint64_t value) {
  const fmt::format_int text(value);
  write_field(head, name, std::string_view(text.data(), text.size()));
}

/// `HTTP/1.x STATUS REASON`; `version` as Beast counts it (10, 11).
inline void write_status_line(HeadText& head, unsigned version, unsigned status,
                              std::string_view reason) {
  append(head, version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ");
  append_number(head, status);
  append(head, " ");
  append(head, reason);
  append(head, "\r\n");
}

/// The Connection field a response needs for the client's version to mean `keep_alive`.
inline void write_persistence(HeadText& head, unsigned version, bool keep_alive) {
  if (version >= 11 && !keep_alive) {
    append(head, "Connection: close\r\n");
  } else if (version < 11 && keep_alive) {
    append(head, "Connection: keep-alive\r\n");
  }
}

/// The blank line that ends a head.
inline void end_head(HeadText& head) { append(head, "\r\n"); }

}  // namespace sluice::proxy
