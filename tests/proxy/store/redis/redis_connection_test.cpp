// The pipelined Redis connection against a real redis-server started by the test.
#include "proxy/store/redis/redis_connection.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "config/addresses.hpp"
#include "tests/support/event_loop.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/test_upstream.hpp"

namespace sluice::store::redis {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

config::RedisEndpoint endpoint_of(const std::string& url) {
  std::string problem;
  auto endpoint = config::parse_redis_url(url, problem);
  EXPECT_TRUE(endpoint.has_value()) << problem;
  return endpoint.value_or(config::RedisEndpoint{});
}

/// The test's event loop, with the connection's calls.
class Loop : public test::EventLoop {
 public:
  std::shared_ptr<RedisConnection> open(const std::string& url) {
    std::shared_ptr<RedisConnection> connection;
    run([&]() -> io::Awaitable<void> {
      connection = co_await RedisConnection::open(endpoint_of(url), url, 1s);
    });
    return connection;
  }

  /// Opening a connection must fail; returns the message.
  std::string open_error(const std::string& url, limiter::Duration timeout = 1s) {
    std::string message;
    run([&]() -> io::Awaitable<void> {
      try {
        auto connection = co_await RedisConnection::open(endpoint_of(url), url, timeout);
        connection->close();
        ADD_FAILURE() << "opened " << url;
      } catch (const RedisError& error) {
        message = error.what();
      }
    });
    return message;
  }

  RedisReply call(RedisConnection& connection, std::vector<std::string_view> arguments,
                  limiter::Duration timeout = 1s) {
    RedisReply reply;
    run([&]() -> io::Awaitable<void> { reply = co_await connection.command(arguments, timeout); });
    return reply;
  }
};

TEST(RedisConnection, PipelinesConcurrentCommandsAndMatchesRepliesInOrder) {
  const test::RedisServer redis;
  Loop loop;
  const auto connection = loop.open(redis.url());
  // 200 coroutines send INCR at once; the i-th sent must get i + 1.
  std::vector<long long> got(200, 0);
  std::size_t finished = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    net::co_spawn(
        loop.io(),
        [&, i]() -> io::Awaitable<void> {
          const std::array<std::string_view, 2> incr{"INCR", "counter"};
          const RedisReply reply = co_await connection->command(incr, 1s);
          EXPECT_FALSE(reply.error) << reply.error.message();
          got[i] = reply.value.integer;
          ++finished;
        },
        net::detached);
  }
  while (finished < got.size()) {
    loop.io().run_one();
  }
  connection->close();
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], static_cast<long long>(i + 1)) << i;
  }
}

TEST(RedisConnection, KeepsItsConnectionCheckedWithTcpKeepalive) {
  const test::RedisServer redis;
  Loop loop;
  const auto connection = loop.open(redis.url());
  const auto option = [&](int level, int name) {
    int value = -1;
    socklen_t size = sizeof value;
    EXPECT_EQ(::getsockopt(connection->native_handle(), level, name, &value, &size), 0);
    return value;
  };
  EXPECT_EQ(option(SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPIDLE), kKeepAliveIdleSeconds);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPINTVL), kKeepAliveIntervalSeconds);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPCNT), kKeepAliveProbes);
  connection->close();
}

TEST(RedisConnection, RunsScriptsByHashAfterLoadingThem) {
  const test::RedisServer redis;
  Loop loop;
  const auto connection = loop.open(redis.url());
  const std::string script = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
  const RedisReply unknown = loop.call(
      *connection, {"EVALSHA", "0123456789012345678901234567890123456789", "1", "k", "5"});
  ASSERT_TRUE(unknown.value.is_error());
  EXPECT_THAT(unknown.value.text, HasSubstr("NOSCRIPT"));
  const RedisReply loaded = loop.call(*connection, {"SCRIPT", "LOAD", script});
  ASSERT_EQ(loaded.value.kind, RespValue::Kind::bulk);
  EXPECT_EQ(loop.call(*connection, {"EVALSHA", loaded.value.text, "1", "k", "5"}).value.integer, 5);
  EXPECT_EQ(loop.call(*connection, {"EVALSHA", loaded.value.text, "1", "k", "5"}).value.integer,
            10);
  const RedisReply array = loop.call(*connection, {"EVAL", "return {1, 'two', {3}}", "0"});
  ASSERT_EQ(array.value.kind, RespValue::Kind::array);
  ASSERT_EQ(array.value.elements.size(), 3U);
  EXPECT_EQ(array.value.elements[1].text, "two");
  EXPECT_EQ(array.value.elements[2].elements[0].integer, 3);
  EXPECT_EQ(loop.call(*connection, {"GET", "absent"}).value.kind, RespValue::Kind::nil);
  connection->close();
}

TEST(RedisConnection, AuthenticatesAndSelectsTheDatabaseOfTheUrl) {
  const test::RedisServer redis("s3cret");
  Loop loop;
  const auto in_db3 = loop.open(redis.url(3));
  const auto in_db0 = loop.open(redis.url(0));
  EXPECT_EQ(loop.call(*in_db3, {"SET", "where", "three"}).value.text, "OK");
  EXPECT_EQ(loop.call(*in_db3, {"GET", "where"}).value.text, "three");
  EXPECT_EQ(loop.call(*in_db0, {"GET", "where"}).value.kind, RespValue::Kind::nil);
  in_db3->close();
  in_db0->close();
}

TEST(RedisConnection, RefusesBadStartsWithTheUrlAndNoPassword) {
  const test::RedisServer redis("s3cret");
  Loop loop;
  const std::string port = std::to_string(redis.port());
  const std::string wrong_password = loop.open_error("redis://:guess@127.0.0.1:" + port + "/0");
  EXPECT_THAT(wrong_password, HasSubstr("redis://:***@127.0.0.1:" + port + "/0"));
  EXPECT_THAT(wrong_password, HasSubstr("AUTH failed"));
  EXPECT_THAT(wrong_password, Not(HasSubstr("guess")));
  EXPECT_THAT(loop.open_error("redis://:s3cret@127.0.0.1:" + port + "/99999"),
              HasSubstr("SELECT 99999 failed"));
  EXPECT_THAT(loop.open_error("redis://127.0.0.1:" + port + "/0"), HasSubstr("NOAUTH"));

  const test::TestUpstream http_server;  // not Redis
  EXPECT_THAT(loop.open_error("redis://127.0.0.1:" + std::to_string(http_server.port()), 300ms),
              HasSubstr("PING failed"));
  EXPECT_THAT(loop.open_error("redis://127.0.0.1:1/0"), HasSubstr("cannot connect"));
}

// Every character a URL reserves in a password, and a '%' before hex digits: decoded once, the
// URL's "%2540" is "%40", not "@".
constexpr const char* kReservedPassword = "p@ss/w:rd%40?#";
constexpr const char* kEncodedPassword = "p%40ss%2Fw%3Ard%2540%3F%23";

TEST(RedisConnection, LogsInWithThePercentDecodedUserAndPassword) {
  const test::RedisServer redis(kReservedPassword);
  Loop loop;
  const std::string address = "@127.0.0.1:" + std::to_string(redis.port());
  ASSERT_EQ(redis.url(2), std::string("redis://:") + kEncodedPassword + address + "/2");
  const auto as_default = loop.open(redis.url(2));
  EXPECT_EQ(loop.call(*as_default, {"ACL", "WHOAMI"}).value.text, "default");
  EXPECT_EQ(loop.call(*as_default, {"SET", "where", "two"}).value.text, "OK");
  // An ACL user whose name needs escaping as well, and one that needs no password.
  const std::string grant = std::string(">") + kReservedPassword;
  EXPECT_EQ(
      loop.call(*as_default, {"ACL", "SETUSER", "app:1@x", "on", grant, "~*", "+@all"}).value.text,
      "OK");
  EXPECT_EQ(
      loop.call(*as_default, {"ACL", "SETUSER", "open", "on", "nopass", "~*", "+@all"}).value.text,
      "OK");
  as_default->close();

  const auto as_app =
      loop.open(std::string("redis://app%3A1%40x:") + kEncodedPassword + address + "/2");
  EXPECT_EQ(loop.call(*as_app, {"ACL", "WHOAMI"}).value.text, "app:1@x");
  EXPECT_EQ(loop.call(*as_app, {"GET", "where"}).value.text, "two");
  as_app->close();
  const auto as_open = loop.open("redis://open:" + address + "/0");
  EXPECT_EQ(loop.call(*as_open, {"ACL", "WHOAMI"}).value.text, "open");
  as_open->close();
}

TEST(RedisConnection, NamesTheUrlWithoutThePasswordWhenAuthFails) {
  const test::RedisServer redis(kReservedPassword);
  Loop loop;
  const std::string port = std::to_string(redis.port());
  // The right password, left as written: decoded, it is another one.
  const std::string raw = std::string("redis://:") + kReservedPassword + "@127.0.0.1:" + port;
  std::string problem;
  EXPECT_FALSE(config::parse_redis_url(raw, problem).has_value());
  EXPECT_THAT(problem, Not(HasSubstr("p@ss"))) << problem;
  const std::string wrong = "redis://:p%40ss%2Fw%3Ard@127.0.0.1:" + port + "/0";
  const std::string message = loop.open_error(wrong);
  EXPECT_THAT(message, HasSubstr("Redis at redis://:***@127.0.0.1:" + port +
                                 "/0: AUTH failed: "
                                 "WRONGPASS"));
  EXPECT_THAT(message, Not(HasSubstr("p%40ss")));
  EXPECT_THAT(message, Not(HasSubstr("p@ss")));
}

TEST(RedisConnection, NeverShowsThePasswordARedisErrorEchoes) {
  // Without AUTH, Redis answers it with an error that quotes its arguments.
  const test::RedisServer redis("", {"--rename-command", "AUTH", ""});
  Loop loop;
  const std::string port = std::to_string(redis.port());
  const std::string message =
      loop.open_error("redis://app:" + std::string(kEncodedPassword) + "@127.0.0.1:" + port + "/0");
  EXPECT_THAT(message, HasSubstr("Redis at redis://app:***@127.0.0.1:" + port +
                                 "/0: AUTH failed: ERR unknown command"));
  EXPECT_THAT(message, Not(HasSubstr("p@ss")));
  EXPECT_THAT(message, Not(HasSubstr("p%40ss")));
}

TEST(RedisConnection, TimesOutWhileRedisHangsAndRecoversWhenItResumes) {
  const test::RedisServer redis;
  Loop loop;
  const auto connection = loop.open(redis.url());
  EXPECT_EQ(loop.call(*connection, {"SET", "k", "before"}).value.text, "OK");
  redis.pause();
  const auto started = std::chrono::steady_clock::now();
  const RedisReply hung = loop.call(*connection, {"GET", "k"}, 50ms);
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(hung.error, boost::beast::error::timeout);
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 500ms);
  redis.resume();
  // The late reply to the GET is dropped; the next command gets its own.
  EXPECT_EQ(loop.call(*connection, {"SET", "k", "after"}).value.text, "OK");
  EXPECT_EQ(loop.call(*connection, {"GET", "k"}).value.text, "after");
  EXPECT_FALSE(connection->broken());
  connection->close();
  EXPECT_TRUE(connection->broken());
  EXPECT_TRUE(loop.call(*connection, {"PING"}).error);
}

TEST(RedisConnection, RefusesCommandsAtOnceWhileTooManyBytesWaitToBeWritten) {
  // Redis stops reading, its connection up: 32 SETs of 1 MiB fill the socket's buffers, then
  // kMaxUnsentBytes; the commands beyond fail at once instead of piling up.
  const test::RedisServer redis;
  Loop loop;
  const auto connection = loop.open(redis.url());
  redis.pause();
  const std::string value(1 << 20, 'x');
  std::size_t refused = 0;
  std::size_t answered = 0;
  constexpr std::size_t kCommands = 32;
  for (std::size_t i = 0; i < kCommands; ++i) {
    net::co_spawn(
        loop.io(),
        [&]() -> io::Awaitable<void> {
          const std::array<std::string_view, 3> set{"SET", "big", value};
          const RedisReply reply = co_await connection->command(set, 5s);
          if (reply.error == boost::system::errc::no_buffer_space) {
            ++refused;
          } else {
            EXPECT_FALSE(reply.error) << reply.error.message();
            ++answered;
          }
        },
        net::detached);
  }
  loop.run_for(200ms);
  EXPECT_GT(refused, 0U);
  EXPECT_EQ(answered, 0U);  // Redis still sleeps
  EXPECT_FALSE(connection->broken());
  redis.resume();
  while (refused + answered < kCommands) {
    loop.io().run_one();
  }
  EXPECT_GE(answered, RedisConnection::kMaxUnsentBytes / value.size());
  EXPECT_EQ(loop.call(*connection, {"STRLEN", "big"}).value.integer, 1 << 20);
  connection->close();
}

TEST(RedisConnection, SaysWhyAReplyIsNoAnswer) {
  RedisReply timed_out;
  timed_out.error = beast::error::timeout;
  EXPECT_EQ(reason_of(timed_out), "timed out");
  RedisReply broken;
  broken.error = net::error::connection_reset;
  EXPECT_EQ(reason_of(broken), broken.error.message());
  RedisReply refused;
  refused.value.kind = RespValue::Kind::error;
  refused.value.text = "ERR unknown command";
  EXPECT_EQ(reason_of(refused), "ERR unknown command");
  RedisReply odd;
  odd.value.kind = RespValue::Kind::integer;
  EXPECT_EQ(reason_of(odd), "unexpected reply");
}

}  // namespace
}  // namespace sluice::store::redis
