#include "proxy/store/redis/redis_connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "config/url.hpp"
#include "proxy/io/net.hpp"

namespace sluice::store::redis {
namespace {

/// The error for a connection whose peer does not speak RESP.
boost::system::error_code protocol_error() {
  return boost::system::errc::make_error_code(boost::system::errc::protocol_error);
}

std::string what_went_wrong(const RedisReply& reply) {
  return reply.error ? reply.error.message() : reply.value.text;
}

/// Why AUTH failed, without the password: an error reply may echo the command's arguments, cut
/// anywhere (`ERR unknown command 'AUTH', with args beginning with: 'user' 'secr`). Such echoes
/// are quoted, so the reply is shown up to its first quote, and never with the password in it.
std::string auth_failure(const RedisReply& reply, std::string_view password) {
  std::string why = what_went_wrong(reply);
  why.erase(std::min(why.find_first_of("'`\""), why.size()));
  while (!why.empty() && (why.back() == ' ' || why.back() == ',')) {
    why.pop_back();
  }
  if (!password.empty()) {
    for (std::size_t at = why.find(password); at != std::string::npos; at = why.find(password)) {
      why.replace(at, password.size(), "***");
    }
  }
  return why;
}

}  // namespace

std::string reason_of(const RedisReply& reply) {
  if (reply.error) {
    return reply.error == beast::error::timeout ? std::string("timed out") : reply.error.message();
  }
  return reply.value.is_error() ? reply.value.text : std::string("unexpected reply");
}

RedisConnection::RedisConnection(io::Socket socket) : socket_(std::move(socket)) {}

RedisConnection::~RedisConnection() = default;

io::Awaitable<std::shared_ptr<RedisConnection>> RedisConnection::open(
    const config::RedisEndpoint& endpoint, std::string_view url, limiter::Duration timeout) {
  const std::string shown = config::redact_url(url);
  const auto executor = co_await net::this_coro::executor;
  io::Resolver resolver(executor);
  auto [resolve_error, endpoints] = co_await resolver.async_resolve(
      endpoint.host, std::to_string(endpoint.port), io::use_nothrow);
  if (resolve_error) {
    throw RedisError("Redis at " + shown + ": cannot resolve " + endpoint.host + ": " +
                     resolve_error.message());
  }
  beast::basic_stream<tcp, io::Executor> stream(executor);
  stream.expires_after(timeout);
  auto [connect_error, connected] = co_await stream.async_connect(endpoints, io::use_nothrow);
  if (connect_error) {
    throw RedisError("Redis at " + shown + ": cannot connect: " +
                     (connect_error == beast::error::timeout ? std::string("timed out")
                                                             : connect_error.message()));
  }
  boost::system::error_code ignored;
  stream.socket().set_option(tcp::no_delay(true), ignored);
  stream.socket().set_option(net::socket_base::keep_alive(true), ignored);
  const int fd = stream.socket().native_handle();
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepAliveIdleSeconds, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepAliveIntervalSeconds, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepAliveProbes, sizeof(int));
  auto connection = std::make_shared<RedisConnection>(stream.release_socket());
  const auto fail = [&](std::string_view step, const std::string& why) {
    connection->close();
    throw RedisError("Redis at " + shown + ": " + std::string(step) + " failed: " + why);
  };
  const auto check = [&](const RedisReply& reply, std::string_view step) {
    if (reply.error || reply.value.is_error()) {
      fail(step, what_went_wrong(reply));
    }
  };
  // The URL's user and password, percent-decoded. A user without a password still logs in as
  // that user (an ACL user may have `nopass`), rather than silently as the default one.
  if (!endpoint.user.empty() || !endpoint.password.empty()) {
    std::vector<std::string_view> auth{"AUTH"};
    if (!endpoint.user.empty()) {
      auth.emplace_back(endpoint.user);
    }
    auth.emplace_back(endpoint.password);
    const RedisReply authenticated = co_await connection->command(auth, timeout);
    if (authenticated.error || authenticated.value.is_error()) {
      fail("AUTH", auth_failure(authenticated, endpoint.password));
    }
  }
  if (endpoint.db != 0) {
    const std::string db = std::to_string(endpoint.db);
    const std::array<std::string_view, 2> select{"SELECT", db};
    const RedisReply selected = co_await connection->command(select, timeout);
    check(selected, "SELECT " + db);
  }
  const std::array<std::string_view, 1> ping{"PING"};
  const RedisReply pong = co_await connection->command(ping, timeout);
  check(pong, "PING");
  if (pong.value.text != "PONG") {
    connection->close();
    throw RedisError("Redis at " + shown + ": not Redis (PING answered \"" + pong.value.text +
                     "\")");
  }
  co_return connection;
}

io::Awaitable<RedisReply> RedisConnection::command(std::span<const std::string_view> arguments,
                                                   limiter::Duration timeout) {
  co_return co_await exchange(arguments, timeout, nullptr);
}

io::Awaitable<RedisReply> RedisConnection::command(std::span<const std::string_view> arguments,
                                                   limiter::Duration timeout, ReplySink& sink) {
  co_return co_await exchange(arguments, timeout, &sink);
}

std::shared_ptr<RedisConnection::Pending> RedisConnection::take_pending(
    const io::Executor& executor) {
  if (spare_.empty()) {
    return std::make_shared<Pending>(executor);
  }
  std::shared_ptr<Pending> pending = std::move(spare_.back());
  spare_.pop_back();
  pending->reply.error = {};
  pending->done = false;
  return pending;
}

void RedisConnection::recycle(std::shared_ptr<Pending> pending) {
  // Only a pending nobody else holds: one that timed out stays in waiting_ until its reply.
  if (pending.use_count() == 1 && spare_.size() < kSparePending) {
    spare_.push_back(std::move(pending));
  }
}

io::Awaitable<RedisReply> RedisConnection::exchange(std::span<const std::string_view> arguments,
                                                    limiter::Duration timeout, ReplySink* sink) {
  if (broken_) {
    co_return RedisReply{.error = broken_, .value = {}};
  }
  if (unsent_.size() >= kMaxUnsentBytes) {
    co_return RedisReply{
        .error = boost::system::errc::make_error_code(boost::system::errc::no_buffer_space),
        .value = {}};
  }
  const auto executor = co_await net::this_coro::executor;
  std::shared_ptr<Pending> pending = take_pending(executor);
  pending->sink = sink;
  pending->wake.expires_after(timeout);
  append_command(unsent_, arguments);
  waiting_.push_back(pending);
  if (!reading_) {
    reading_ = true;
    net::co_spawn(executor, read_loop(shared_from_this()), net::detached);
  }
  if (!writer_) {
    writer_.emplace(executor);
    writer_->expires_at(io::Timer::time_point::max());
    net::co_spawn(executor, write_loop(shared_from_this()), net::detached);
  } else if (writer_idle_) {
    writer_idle_ = false;
    writer_->cancel();
  }
  if (!pending->done) {  // a connection that failed meanwhile has answered it already
    co_await pending->wake.async_wait(io::use_nothrow);
  }
  RedisReply reply;
  if (!pending->done) {
    pending->done = true;  // the reply, when it comes, is dropped
    ++timeouts_in_a_row_;
    reply.error = beast::error::timeout;
  } else {
    reply = std::move(pending->reply);
  }
  recycle(std::move(pending));
  co_return reply;
}

io::Awaitable<void> RedisConnection::write_loop(std::shared_ptr<RedisConnection> /*keep_alive*/) {
  while (!broken_) {
    if (unsent_.empty()) {
      writer_idle_ = true;  // until a command comes, or the connection fails
      co_await writer_->async_wait(io::use_nothrow);
      continue;
    }
    sending_.clear();
    sending_.swap(unsent_);  // commands added meanwhile go in the next write
    auto [error, written] =
        co_await net::async_write(socket_, net::buffer(sending_), io::use_nothrow);
    if (error) {
      fail(error);
    }
  }
}

io::Awaitable<void> RedisConnection::read_loop(std::shared_ptr<RedisConnection> /*keep_alive*/) {
  std::array<char, 16 * 1024> bytes;
  while (!broken_) {
    auto [error, read] = co_await socket_.async_read_some(net::buffer(bytes), io::use_nothrow);
    if (error) {
      fail(error);
      break;
    }
    try {
      reader_.feed(std::string_view(bytes.data(), read));
      while (const RespValue* value = reader_.next()) {
        complete_next(*value);
      }
    } catch (const std::runtime_error&) {
      fail(protocol_error());
    }
  }
  reading_ = false;
}

void RedisConnection::complete_next(const RespValue& value) {
  if (waiting_head_ == waiting_.size()) {
    fail(protocol_error());  // a reply nobody asked for
    return;
  }
  const std::shared_ptr<Pending> pending = std::move(waiting_[waiting_head_++]);
  if (waiting_head_ == waiting_.size()) {
    waiting_.clear();  // keeps its capacity
    waiting_head_ = 0;
  } else if (waiting_head_ >= kSparePending && waiting_head_ * 2 >= waiting_.size()) {
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(waiting_head_));
    waiting_head_ = 0;
  }
  timeouts_in_a_row_ = 0;  // Redis answers on this connection, if late
  if (pending->done) {
    return;  // its command timed out
  }
  pending->done = true;
  if (pending->sink != nullptr) {
    pending->sink->read(value);
  } else {
    pending->reply.value = value;
  }
  pending->wake.cancel();
}

void RedisConnection::fail(boost::system::error_code error) {
  if (!broken_) {
    broken_ = error;
  }
  boost::system::error_code ignored;
  socket_.close(ignored);
  for (std::size_t i = waiting_head_; i < waiting_.size(); ++i) {
    Pending& pending = *waiting_[i];
    if (!pending.done) {
      pending.done = true;
      pending.reply.error = broken_;
      pending.wake.cancel();
    }
  }
  waiting_.clear();
  waiting_head_ = 0;
  unsent_.clear();
  if (writer_) {
    writer_->cancel();  // the writer sees the failure and ends
  }
}

void RedisConnection::close() { fail(net::error::operation_aborted); }

}  // namespace sluice::store::redis
