#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "config/cidr.hpp"
#include "proxy/pipeline/ip_address.hpp"

namespace sluice::pipeline {

/// A set of IPv4 and IPv6 networks (the deny list), as two binary tries: a lookup walks at most
/// 32 or 128 nodes, whatever the number of networks. Read-only once built: thread-safe.
class CidrTrie {
 public:
  void insert(const config::Cidr& network);
  /// Whether any network holds `address`.
  bool contains(const IpAddress& address) const noexcept;
  bool empty() const noexcept { return networks_ == 0; }

 private:
  struct Node {
    std::array<std::uint32_t, 2> child{0, 0};  ///< 0: none (node 0 is a root, never a child).
    bool terminal = false;                     ///< A network ends here.
  };
  std::vector<Node>& tree(bool ipv4) { return ipv4 ? v4_ : v6_; }
  const std::vector<Node>& tree(bool ipv4) const { return ipv4 ? v4_ : v6_; }

  std::vector<Node> v4_{Node{}};
  std::vector<Node> v6_{Node{}};
  std::size_t networks_ = 0;
};

}  // namespace sluice::pipeline
