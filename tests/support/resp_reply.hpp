#pragma once

#include <string_view>

#include "proxy/store/redis/resp.hpp"

namespace sluice::test {

/// The reply `bytes` (RESP) read by the store's reader; nil if they hold no whole reply.
inline store::redis::RespValue reply_of(std::string_view bytes) {
  store::redis::RespReader reader;
  reader.feed(bytes);
  const store::redis::RespValue* reply = reader.next();
  return reply != nullptr ? *reply : store::redis::RespValue{};
}

}  // namespace sluice::test
