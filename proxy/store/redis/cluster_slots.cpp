#include "proxy/store/redis/cluster_slots.hpp"

#include <algorithm>
#include <boost/crc.hpp>

namespace sluice::store::redis {

std::uint16_t key_slot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  boost::crc_optimal<16, 0x1021, 0, 0, false, false> crc;  // CRC16/XMODEM
  crc.process_bytes(key.data(), key.size());
  return static_cast<std::uint16_t>(crc.checksum() % kClusterSlots);
}

std::string SlotMap::uncovered() const {
  const auto first = std::find(owner.begin(), owner.end(), kNone);
  if (first == owner.end()) {
    return {};
  }
  const auto end = std::find_if(first, owner.end(), [](std::uint16_t o) { return o != kNone; });
  return std::to_string(first - owner.begin()) + "-" + std::to_string(end - owner.begin() - 1);
}

std::optional<SlotMap> read_slot_map(const RespValue& reply, std::string_view seed_host) {
  using Kind = RespValue::Kind;
  if (reply.kind != Kind::array) {
    return std::nullopt;
  }
  SlotMap map;
  for (const RespValue& range : reply.elements) {
    // [first slot, last slot, [host, port, id, ...], replicas ...]
    if (range.kind != Kind::array || range.elements.size() < 3 ||
        range.elements[0].kind != Kind::integer || range.elements[1].kind != Kind::integer ||
        range.elements[2].kind != Kind::array || range.elements[2].elements.size() < 2) {
      return std::nullopt;
    }
    const long long first = range.elements[0].integer;
    const long long last = range.elements[1].integer;
    const RespValue& host = range.elements[2].elements[0];
    const RespValue& port = range.elements[2].elements[1];
    if (first < 0 || last < first || last >= static_cast<long long>(kClusterSlots) ||
        host.kind != Kind::bulk || port.kind != Kind::integer) {
      return std::nullopt;
    }
    const std::string address = (host.text.empty() ? std::string(seed_host) : host.text) + ":" +
                                std::to_string(port.integer);
    auto known = std::find(map.masters.begin(), map.masters.end(), address);
    if (known == map.masters.end()) {
      known = map.masters.insert(map.masters.end(), address);
    }
    const auto index = static_cast<std::uint16_t>(known - map.masters.begin());
    std::fill(map.owner.begin() + first, map.owner.begin() + last + 1, index);
  }
  return map;
}

}  // namespace sluice::store::redis
