#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::store::redis {

/// One Redis reply (RESP2): a status (`+OK`), an error (`-ERR …`), an integer, a bulk string
/// (absent for nil) or an array of replies.
struct RespValue {
  enum class Kind { status, error, integer, bulk, nil, array };
  Kind kind = Kind::nil;
  std::string text;  ///< status, error and bulk
  long long integer = 0;
  std::vector<RespValue> elements;

  bool is_error() const noexcept { return kind == Kind::error; }
};

/// Appends a command (an array of bulk strings) in RESP to `out`.
void append_command(std::string& out, std::span<const std::string_view> arguments);

/// Parses replies from the bytes a connection reads, with hiredis's reader (only its parser: the
/// networking is the proxy's own). Each reply is built in place in one RespValue that the reader
/// keeps and reuses, so replies of a shape seen before are read without allocating.
class RespReader {
 public:
  RespReader();
  RespReader(const RespReader&) = delete;
  RespReader& operator=(const RespReader&) = delete;
  RespReader(RespReader&&) noexcept;
  RespReader& operator=(RespReader&&) noexcept;
  ~RespReader();

  /// Hands over bytes read from the connection.
  void feed(std::string_view bytes);
  /// The next whole reply, if one has arrived: valid until the next call, to be read in place or
  /// copied. Throws std::runtime_error on a protocol error (the peer is not speaking RESP).
  const RespValue* next();

 private:
  struct State;
  std::unique_ptr<State> state_;  ///< On the heap: hiredis holds its address.
};

}  // namespace sluice::store::redis
