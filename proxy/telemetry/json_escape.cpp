#include "proxy/telemetry/json_escape.hpp"

namespace sluice::telemetry {
namespace {

bool in_range(unsigned byte, unsigned low, unsigned high) noexcept {
  return byte >= low && byte <= high;
}

/// The length of the well-formed UTF-8 sequence that starts `text` (the Unicode standard's
/// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), or 0 if none does.
std::size_t utf8_sequence_length(std::string_view text) noexcept {
  const auto byte = [text](std::size_t i) -> unsigned {
    return i < text.size() ? static_cast<unsigned char>(text[i]) : 0U;
  };
  const unsigned lead = byte(0);
  if (in_range(lead, 0xC2, 0xDF)) {
    return in_range(byte(1), 0x80, 0xBF) ? 2 : 0;
  }
  if (in_range(lead, 0xE0, 0xEF)) {
    const unsigned low = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned high = lead == 0xED ? 0x9F : 0xBF;
    return in_range(byte(1), low, high) && in_range(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in_range(lead, 0xF0, 0xF4)) {
    const unsigned low = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned high = lead == 0xF4 ? 0x8F : 0xBF;
    return in_range(byte(1), low, high) && in_range(byte(2), 0x80, 0xBF) &&
                   in_range(byte(3), 0x80, 0xBF)
               ? 4
               : 0;
  }
  return 0;
}

/// U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR, as UTF-8.
bool is_line_separator(std::string_view sequence) noexcept {
  return sequence == "\xE2\x80\xA8" || sequence == "\xE2\x80\xA9";
}

void append_text(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

}  // namespace

void append_json_escaped(fmt::memory_buffer& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t copied = 0;  // text before this is already in `out`
  std::size_t at = 0;
  while (at < text.size()) {
    const auto byte = static_cast<unsigned char>(text[at]);
    std::size_t length = 1;
    if (byte >= 0x80) {
      length = utf8_sequence_length(text.substr(at));
      if (length > 0 && !is_line_separator(text.substr(at, length))) {
        at += length;
        continue;
      }
    } else if (byte >= 0x20 && byte != 0x7F && byte != '"' && byte != '\\') {
      ++at;
      continue;
    }
    append_text(out, text.substr(copied, at - copied));
    if (byte == '"' || byte == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(byte));
    } else if (byte < 0x80) {
      const char escape[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xF]};
      append_text(out, {escape, sizeof escape});
    } else if (length == 0) {
      append_text(out, "\\ufffd");
      length = 1;
    } else {
      append_text(out, text[at + 2] == '\xA8' ? "\\u2028" : "\\u2029");
    }
    at += length;
    copied = at;
  }
  append_text(out, text.substr(copied));
}

}  // namespace sluice::telemetry
