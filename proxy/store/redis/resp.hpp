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
/// networking is the proxy's own).
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
  /// The next whole reply, if one has arrived. Throws std::runtime_error on a protocol error
  /// (the peer is not speaking RESP).
  std::optional<RespValue> next();

 private:
  struct Deleter {
    void operator()(void* reader) const noexcept;
  };
  std::unique_ptr<void, Deleter> reader_;
};

}  // namespace sluice::store::redis
