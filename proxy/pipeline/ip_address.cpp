#include "proxy/pipeline/ip_address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <iterator>

#include "proxy/pipeline/http_text.hpp"

namespace sluice::pipeline {
namespace {

/// An address from a forwarding header entry: `1.2.3.4`, `1.2.3.4:5678`, `[::1]:80`, `"[::1]"`.
std::optional<IpAddress> parse_node(std::string_view text) {
  text = trim_whitespace(text);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
  }
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    return close == std::string_view::npos ? std::nullopt
                                           : IpAddress::parse(text.substr(1, close - 1));
  }
  if (std::count(text.begin(), text.end(), ':') == 1) {
    text = text.substr(0, text.find(':'));  // IPv4 with a port
  }
  return IpAddress::parse(text);
}

bool trusted_by(const IpAddress& address, std::span<const config::Cidr> trusted) {
  return std::any_of(trusted.begin(), trusted.end(),
                     [&](const config::Cidr& network) { return address.in(network); });
}

/// Forwarding chains longer than this keep only their last (rightmost) hops: the ones that are
/// read anyway, and the only ones a proxy in front of us could vouch for.
constexpr std::size_t kMaxHops = 32;

/// The addresses a header names, left to right, in a fixed array: no allocation per request.
class Hops {
 public:
  void push_back(std::string_view hop) noexcept {
    if (size_ == kMaxHops) {  // drop the oldest (leftmost)
      std::move(hops_.begin() + 1, hops_.end(), hops_.begin());
      --size_;
    }
    hops_[size_++] = hop;
  }
  auto rbegin() const noexcept { return std::make_reverse_iterator(hops_.begin() + size_); }
  auto rend() const noexcept { return std::make_reverse_iterator(hops_.begin()); }

 private:
  std::array<std::string_view, kMaxHops> hops_{};
  std::size_t size_ = 0;
};

/// The addresses a header names, in order (left to right).
Hops hops(std::string_view forwarded, std::string_view x_forwarded_for) {
  Hops found;
  if (!forwarded.empty()) {
    // Forwarded: for=192.0.2.60;proto=http, for="[2001:db8::1]"
    std::size_t start = 0;
    while (start <= forwarded.size()) {
      const std::size_t comma = std::min(forwarded.find(',', start), forwarded.size());
      std::string_view element = forwarded.substr(start, comma - start);
      std::size_t pair = 0;
      while (pair <= element.size()) {
        const std::size_t semicolon = std::min(element.find(';', pair), element.size());
        const std::string_view parameter = trim_whitespace(element.substr(pair, semicolon - pair));
        if (parameter.size() > 4 &&
            (parameter.substr(0, 4) == "for=" || parameter.substr(0, 4) == "For=" ||
             parameter.substr(0, 4) == "FOR=")) {
          found.push_back(parameter.substr(4));
        }
        pair = semicolon + 1;
      }
      start = comma + 1;
    }
    return found;
  }
  std::size_t start = 0;
  while (!x_forwarded_for.empty() && start <= x_forwarded_for.size()) {
    const std::size_t comma = std::min(x_forwarded_for.find(',', start), x_forwarded_for.size());
    found.push_back(x_forwarded_for.substr(start, comma - start));
    start = comma + 1;
  }
  return found;
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  char buffer[64] = {};
  if (text.empty() || text.size() >= sizeof buffer) {
    return std::nullopt;
  }
  std::copy(text.begin(), text.end(), buffer);
  IpAddress address;
  if (inet_pton(AF_INET, buffer, address.bytes.data()) == 1) {
    address.ipv4 = true;
    return address;
  }
  if (inet_pton(AF_INET6, buffer, address.bytes.data()) == 1) {
    address.ipv4 = false;
    // An IPv4-mapped IPv6 address (::ffff:1.2.3.4) is that IPv4 client.
    static constexpr std::array<std::uint8_t, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped.begin(), kMapped.end(), address.bytes.begin())) {
      std::copy(address.bytes.begin() + 12, address.bytes.end(), address.bytes.begin());
      std::fill(address.bytes.begin() + 4, address.bytes.end(), 0);
      address.ipv4 = true;
    }
    return address;
  }
  return std::nullopt;
}

std::string IpAddress::to_string() const {
  std::string text;
  append_to(text);
  return text;
}

void IpAddress::append_to(std::string& out) const {
  if (ipv4) {
    for (std::size_t i = 0; i < 4; ++i) {
      if (i > 0) {
        out += '.';
      }
      char digits[3];
      const auto [end, error] = std::to_chars(std::begin(digits), std::end(digits), bytes[i]);
      out.append(digits, end);
    }
    return;
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes.data(), text, sizeof text);
  out += text;
}

IpAddress IpAddress::masked(unsigned prefix) const {
  IpAddress copy = *this;
  const unsigned width = ipv4 ? 32 : 128;
  for (unsigned bit = std::min(prefix, width); bit < width; ++bit) {
    copy.bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80U >> (bit % 8)));
  }
  return copy;
}

bool IpAddress::in(const config::Cidr& network) const {
  if (network.ipv4 != ipv4) {
    return false;
  }
  return masked(network.prefix).bytes == network.address;
}

IpAddress client_address(const IpAddress& peer, std::span<const config::Cidr> trusted,
                         std::string_view forwarded, std::string_view x_forwarded_for) {
  if (!trusted_by(peer, trusted)) {
    return peer;  // forwarding headers from an untrusted peer are not believed
  }
  const Hops chain = hops(forwarded, x_forwarded_for);
  IpAddress client = peer;
  for (auto hop = chain.rbegin(); hop != chain.rend(); ++hop) {
    const std::optional<IpAddress> address = parse_node(*hop);
    if (!address) {
      break;  // unparsable ("unknown", obfuscated): stop at the last address we could read
    }
    client = *address;
    if (!trusted_by(client, trusted)) {
      break;
    }
  }
  return client;
}

}  // namespace sluice::pipeline
