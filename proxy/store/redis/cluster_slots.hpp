#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/store/redis/resp.hpp"

namespace sluice::store::redis {

/// Redis Cluster's hash slots: 16384 of them, each served by one master.
inline constexpr std::size_t kClusterSlots = 16384;

/// The slot of a key, as Redis computes it: CRC16 (XMODEM) of the key's hash tag (the text
/// between the first `{` and the next `}`, when not empty), else of the whole key, mod 16384.
std::uint16_t key_slot(std::string_view key) noexcept;

/// Which master serves each slot, from a CLUSTER SLOTS reply.
struct SlotMap {
  static constexpr std::uint16_t kNone = 0xffff;

  /// The masters as "host:port", in order of first appearance.
  std::vector<std::string> masters;
  /// Per slot, its master's index in `masters`, or kNone.
  std::vector<std::uint16_t> owner = std::vector<std::uint16_t>(kClusterSlots, kNone);

  /// The first range of slots no master serves, as "from-to"; empty when all are served.
  std::string uncovered() const;
};

/// Reads a CLUSTER SLOTS reply; `seed_host` stands for a master whose address is empty (Redis
/// gives "" for the node that answered when it does not know its own address). nullopt when the
/// reply is not CLUSTER SLOTS's.
std::optional<SlotMap> read_slot_map(const RespValue& reply, std::string_view seed_host);

}  // namespace sluice::store::redis
