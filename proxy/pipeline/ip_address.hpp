#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/cidr.hpp"

namespace sluice::pipeline {

/// An IPv4 or IPv6 address as bytes (IPv4 in the first 4).
struct IpAddress {
  std::array<std::uint8_t, 16> bytes{};
  bool ipv4 = true;

  static std::optional<IpAddress> parse(std::string_view text);
  /// Dotted or colon notation.
  std::string to_string() const;
  /// Appends the text form to `out` (IPv4 without printf: this is on the request path).
  void append_to(std::string& out) const;
  /// The address with only its first `prefix` bits (IPv6 clients grouped by /64, say).
  IpAddress masked(unsigned prefix) const;
  bool in(const config::Cidr& network) const;

  bool operator==(const IpAddress&) const = default;
};

/// The client of a request (SPEC §2 `trusted_proxies`): the peer, unless the peer is a trusted
/// proxy, in which case the forwarding headers are read right to left and the first address
/// that is not a trusted proxy is the client. A header from an untrusted peer is ignored, so it
/// cannot be spoofed. `Forwarded` (RFC 7239) is read when present, else `X-Forwarded-For`.
IpAddress client_address(const IpAddress& peer, std::span<const config::Cidr> trusted,
                         std::string_view forwarded, std::string_view x_forwarded_for);

}  // namespace sluice::pipeline
