#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::config {

/// An IPv4 or IPv6 network: `203.0.113.0/24`, `2001:db8::/32`, or one address (a full prefix).
struct Cidr {
  std::array<std::uint8_t, 16> address{};  ///< Network bytes; IPv4 uses the first 4.
  unsigned prefix = 0;                     ///< Bits that count.
  bool ipv4 = true;

  bool operator==(const Cidr&) const = default;
};

/// Parses a network; host bits beyond the prefix are cleared, as routers do. nullopt when the
/// address or prefix is not valid.
std::optional<Cidr> parse_cidr(std::string_view text);

std::string to_string(const Cidr& cidr);

}  // namespace sluice::config
