#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/proxy_config.hpp"
#include "limiter/clock.hpp"
#include "proxy/io/net.hpp"
#include "proxy/store/redis/resp.hpp"
#include "proxy/store/store_error.hpp"

namespace sluice::store::redis {

/// Redis could not be used at start: refused, wrong password, wrong db, not Redis. The message
/// names the URL with its password redacted.
class RedisError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// A reply, or why there is none: `error` is beast::error::timeout when it took longer than the
/// command's timeout, or the connection's failure. A Redis error reply (`-ERR …`) is a reply.
struct RedisReply {
  boost::system::error_code error;
  RespValue value;
};

/// Why `reply` is no answer, for messages: "timed out", the connection's failure, or Redis's
/// error text.
std::string reason_of(const RedisReply& reply);

/// One connection to Redis, used from one event loop, pipelined: any number of coroutines of
/// that loop send commands at once; they are written in order, batched into as few writes as the
/// socket allows, and the replies are matched to them in order. The networking is Asio's; the
/// replies are parsed by hiredis's reader.
/// TCP keepalive on every Redis connection: a Redis host that vanished without closing (a
/// failover that moved its address, a partition) is found dead after about 25 s of silence
/// (idle 10 s, then 3 probes 5 s apart), even when no command is waiting for it.
inline constexpr int kKeepAliveIdleSeconds = 10;
inline constexpr int kKeepAliveIntervalSeconds = 5;
inline constexpr int kKeepAliveProbes = 3;

class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  /// Connects within `timeout`, then sends AUTH and SELECT as `endpoint` says and checks with a
  /// PING that Redis answers. Throws RedisError, naming `url` without its password.
  static io::Awaitable<std::shared_ptr<RedisConnection>> open(const config::RedisEndpoint& endpoint,
                                                              std::string_view url,
                                                              limiter::Duration timeout);

  explicit RedisConnection(io::Socket socket);
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;
  RedisConnection(RedisConnection&&) = delete;
  RedisConnection& operator=(RedisConnection&&) = delete;
  ~RedisConnection();

  /// Commands waiting to be written, at most: beyond, a command fails at once with
  /// errc::no_buffer_space (Redis has stopped reading, its connection still up).
  static constexpr std::size_t kMaxUnsentBytes = 4 << 20;

  /// Sends one command and waits up to `timeout` for its reply. A reply that comes after its
  /// command timed out is read and dropped, so the ones after it still match.
  io::Awaitable<RedisReply> command(std::span<const std::string_view> arguments,
                                    limiter::Duration timeout);

  /// Reads a reply where the reader built it, before the next one is parsed: no copy.
  class ReplySink {
   public:
    virtual void read(const RespValue& reply) = 0;

   protected:
    ~ReplySink() = default;
  };
  /// As command(), but the reply goes to `sink` (if it comes in time) instead of being copied
  /// into the result, whose `value` stays nil.
  io::Awaitable<RedisReply> command(std::span<const std::string_view> arguments,
                                    limiter::Duration timeout, ReplySink& sink);

  io::Executor get_executor() { return socket_.get_executor(); }
  /// The socket's descriptor, to read its options.
  int native_handle() { return socket_.native_handle(); }

  /// Commands that timed out since the last reply came in (even a late one): a connection that
  /// only times out may lead to a host that is gone (half-open after a failover).
  std::uint32_t timeouts_in_a_row() const noexcept { return timeouts_in_a_row_; }

  /// Why the connection is unusable (closed, reset, not RESP); empty while it works.
  boost::system::error_code broken() const noexcept { return broken_; }
  void close();

 private:
  /// A command waiting for its reply; the reader fills it in and wakes the waiter by cancelling
  /// its timer.
  struct Pending {
    explicit Pending(const io::Executor& executor) : wake(executor) {}
    io::Timer wake;
    RedisReply reply;
    ReplySink* sink = nullptr;  ///< Reads the reply in place, if set.
    bool done = false;
  };

  /// Both command()s: the reply goes to `sink`, or is copied when there is none.
  io::Awaitable<RedisReply> exchange(std::span<const std::string_view> arguments,
                                     limiter::Duration timeout, ReplySink* sink);
  /// A Pending for the next command: a spare one, or a new one.
  std::shared_ptr<Pending> take_pending(const io::Executor& executor);
  void recycle(std::shared_ptr<Pending> pending);
  /// Each loop holds the connection alive while its operation is pending. The writer runs as
  /// long as the connection works, waiting on writer_ while there is nothing to write.
  io::Awaitable<void> write_loop(std::shared_ptr<RedisConnection> keep_alive);
  io::Awaitable<void> read_loop(std::shared_ptr<RedisConnection> keep_alive);
  void complete_next(const RespValue& value);
  void fail(boost::system::error_code error);

  io::Socket socket_;
  RespReader reader_;
  /// Pendings kept for the next commands: a connection busy with this many commands at once
  /// allocates none.
  static constexpr std::size_t kSparePending = 64;

  std::string unsent_;   ///< Commands not yet handed to the socket.
  std::string sending_;  ///< Commands being written; swapped with unsent_, so both keep capacity.
  std::optional<io::Timer> writer_;  ///< Never expires: wakes the idle writer when cancelled.
  bool writer_idle_ = false;
  bool reading_ = false;
  /// Sent or unsent, in order, from waiting_head_ on (a vector: it keeps its capacity).
  std::vector<std::shared_ptr<Pending>> waiting_;
  std::size_t waiting_head_ = 0;
  std::vector<std::shared_ptr<Pending>> spare_;
  boost::system::error_code broken_;
  std::uint32_t timeouts_in_a_row_ = 0;
};

}  // namespace sluice::store::redis
