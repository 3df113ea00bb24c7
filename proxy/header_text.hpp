#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace sluice::proxy {

/// An HTTP/1.1 message head written as text, straight into a buffer: no field container in
/// between, and inline storage for a typical head, so writing one needs no heap.
using HeadText = fmt::basic_memory_buffer<char, 1024>;

inline void append(HeadText& head, std::string_view text) {
  head.append(text.data(), text.data() + text.size());
}

/// `METHOD TARGET HTTP/1.1`: the upstream always hears HTTP/1.1.
inline void write_request_line(HeadText& head, std::string_view method, std::string_view target) {
  fmt::format_to(std::back_inserter(head), "{} {} HTTP/1.1\r\n", method, target);
}

/// `HTTP/1.x STATUS REASON`; `version` as Beast counts it (10, 11).
inline void write_status_line(HeadText& head, unsigned version, unsigned status,
                              std::string_view reason) {
  fmt::format_to(std::back_inserter(head), "HTTP/{}.{} {} {}\r\n", version / 10, version % 10,
                 status, reason);
}

inline void write_field(HeadText& head, std::string_view name, std::string_view value) {
  fmt::format_to(std::back_inserter(head), "{}: {}\r\n", name, value);
}

inline void write_field(HeadText& head, std::string_view name, std::uint64_t value) {
  fmt::format_to(std::back_inserter(head), "{}: {}\r\n", name, value);
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
