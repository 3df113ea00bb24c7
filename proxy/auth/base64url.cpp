#include "proxy/auth/base64url.hpp"

#include <array>
#include <cstdint>

namespace sluice::auth {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each byte's 6-bit value, or 64 for a byte outside the alphabet.
constexpr std::array<std::uint8_t, 256> kValues = [] {
  std::array<std::uint8_t, 256> values{};
  values.fill(64);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    values[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  }
  return values;
}();

}  // namespace

bool decode_base64url(std::string_view text, std::string& bytes) {
  bytes.clear();
  if (text.size() % 4 == 1) {
    return false;
  }
  bytes.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const std::uint8_t value = kValues[static_cast<unsigned char>(c)];
    if (value == 64) {
      return false;
    }
    bits = (bits << 6) | value;
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  // What is left (2 or 4 bits after the last whole byte) must be zero (RFC 4648 §3.5).
  return (bits & ((1U << count) - 1)) == 0;
}

std::string encode_base64url(std::string_view bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : bytes) {
    bits = (bits << 8) | static_cast<unsigned char>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      text.push_back(kAlphabet[(bits >> count) & 0x3f]);
    }
  }
  if (count > 0) {
    text.push_back(kAlphabet[(bits << (6 - count)) & 0x3f]);
  }
  return text;
}

}  // namespace sluice::auth
