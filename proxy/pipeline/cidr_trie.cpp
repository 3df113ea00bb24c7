#include "proxy/pipeline/cidr_trie.hpp"

namespace sluice::pipeline {
namespace {

unsigned bit_at(const std::array<std::uint8_t, 16>& bytes, unsigned index) {
  return (static_cast<unsigned>(bytes[index / 8]) >> (7U - index % 8U)) & 1U;
}

}  // namespace

void CidrTrie::insert(const config::Cidr& network) {
  std::vector<Node>& nodes = tree(network.ipv4);
  std::uint32_t node = 0;
  for (unsigned depth = 0; depth < network.prefix; ++depth) {
    const unsigned bit = bit_at(network.address, depth);
    if (nodes[node].child[bit] == 0) {
      nodes[node].child[bit] = static_cast<std::uint32_t>(nodes.size());
      nodes.push_back(Node{});
    }
    node = nodes[node].child[bit];
  }
  nodes[node].terminal = true;
  ++networks_;
}

bool CidrTrie::contains(const IpAddress& address) const noexcept {
  const std::vector<Node>& nodes = tree(address.ipv4);
  const unsigned width = address.ipv4 ? 32 : 128;
  std::uint32_t node = 0;
  for (unsigned depth = 0;; ++depth) {
    if (nodes[node].terminal) {
      return true;
    }
    if (depth == width) {
      return false;
    }
    node = nodes[node].child[bit_at(address.bytes, depth)];
    if (node == 0) {
      return false;
    }
  }
}

}  // namespace sluice::pipeline
