#include "config/cidr.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace sluice::config {

std::optional<Cidr> parse_cidr(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::string address(text.substr(0, slash));
  Cidr cidr;
  if (inet_pton(AF_INET, address.c_str(), cidr.address.data()) == 1) {
    cidr.ipv4 = true;
    cidr.prefix = 32;
  } else if (inet_pton(AF_INET6, address.c_str(), cidr.address.data()) == 1) {
    cidr.ipv4 = false;
    cidr.prefix = 128;
  } else {
    return std::nullopt;
  }
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    unsigned prefix = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (error != std::errc{} || end != digits.data() + digits.size() || digits.empty() ||
        prefix > cidr.prefix) {
      return std::nullopt;
    }
    cidr.prefix = prefix;
  }
  for (unsigned bit = cidr.prefix; bit < (cidr.ipv4 ? 32U : 128U); ++bit) {
    cidr.address[bit / 8] &= static_cast<std::uint8_t>(~(0x80U >> (bit % 8)));
  }
  return cidr;
}

std::string to_string(const Cidr& cidr) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(cidr.ipv4 ? AF_INET : AF_INET6, cidr.address.data(), text, sizeof text);
  return std::string(text) + "/" + std::to_string(cidr.prefix);
}

}  // namespace sluice::config
