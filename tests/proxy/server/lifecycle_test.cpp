// The proxy's connection limit, delay mode across connections, permits given back when a
// client goes away, and HTTP/1.0 clients: real sockets against a real upstream.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "tests/support/proxy_fixture.hpp"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

/// Whether anything arrives for `client` within `timeout`.
bool answered_within(RawClient& client, std::chrono::milliseconds timeout) {
  pollfd wanted{.fd = client.socket().native_handle(), .events = POLLIN, .revents = 0};
  return ::poll(&wanted, 1, static_cast<int>(timeout.count())) > 0;
}

constexpr std::string_view kKeepAliveGet = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

TEST(ConnectionLimit, NewConnectionsWaitUntilOneCloses) {
  ProxyFixture proxy("routes: [{name: all}]", "threads: 1\nmax_connections: 2");
  RawClient first(proxy.port());
  RawClient second(proxy.port());
  for (RawClient* client : {&first, &second}) {
    client->write(kKeepAliveGet);
    ASSERT_NE(client->read_until("body 0 0").find("200 OK"), std::string::npos);
  }
  // The third connection is complete in the kernel's listen queue, but not accepted.
  RawClient third(proxy.port());
  third.write(kKeepAliveGet);
  EXPECT_FALSE(answered_within(third, 300ms));
  EXPECT_EQ(proxy.server().open_connections(), 2U);

  first.socket().close();  // frees a slot: the third is accepted and answered
  EXPECT_NE(third.read_until("body 0 0").find("200 OK"), std::string::npos);
  EXPECT_EQ(proxy.upstream().requests(), 3);
}

TEST(ConnectionLimit, ALoopWaitingToAcceptHoldsNoSlot) {
  // Two loops, each with its own listening socket, one slot: whichever loop the kernel gives a
  // connection to serves it once the slot is free.
  ProxyFixture proxy("routes: [{name: all, respond: {status: 204}}]",
                     "threads: 2\nmax_connections: 1");
  for (int i = 0; i < 20; ++i) {
    RawClient client(proxy.port());
    client.write("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(answered_within(client, 2000ms)) << "connection " << i;
    EXPECT_NE(client.read_until("").find("204"), std::string::npos);
  }
}

/// Delay mode on a route that forwards, and on one that answers itself: held is held, whoever
/// answers.
class DelayMode : public testing::TestWithParam<const char*> {};

TEST_P(DelayMode, AnswersHeldRequestsOfOneKeyInArrivalOrderAtTheRate) {
  ProxyFixture proxy(std::string(R"(
limiters:
  shaped: {algorithm: leaky_bucket, rate: 4/s, burst: 3, mode: delay, max_delay: 2s, key: "header:X-Client"}
routes: [{name: all, limiters: [shaped])") +
                     GetParam() + "}]");
  constexpr int kRequests = 4;
  std::vector<std::future<std::chrono::steady_clock::time_point>> answered;
  for (int i = 0; i < kRequests; ++i) {
    answered.push_back(std::async(std::launch::async, [&proxy] {
      auto request = get("/");
      request.set("X-Client", "same");
      const auto response = proxy.send(request);
      EXPECT_EQ(response.result(), http::status::ok);
      return std::chrono::steady_clock::now();
    }));
    // The next request goes only once this one is decided (the bucket shows it): arrival order
    // is then the order written.
    ASSERT_TRUE(admin_shows(proxy.admin_port(), "/limiters/shaped/same",
                            "\"remaining\":" + std::to_string(kRequests - 1 - i)));
  }
  std::vector<std::chrono::steady_clock::time_point> times;
  for (auto& done : answered) {
    times.push_back(done.get());
  }
  // One request every 250 ms, in the order they arrived; the first went at once.
  for (std::size_t i = 1; i < times.size(); ++i) {
    EXPECT_GT(times[i] - times[i - 1], 150ms) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, DelayMode,
                         testing::Values("", ", respond: {status: 200, body: \"ok\\n\"}"),
                         [](const testing::TestParamInfo<const char*>& route) {
                           return std::string(*route.param == '\0' ? "forwarded" : "responding");
                         });

constexpr const char* kOnePerClient = R"(
limiters:
  one: {algorithm: concurrency, limit: 1, key: ip}
routes: [{name: all, limiters: [one]}])";
constexpr const char* kPermitOf127 = "/limiters/one/127.0.0.1";

TEST(ConcurrencyLimit, GivesThePermitBackWhenTheClientGoesAwayMidBody) {
  ProxyFixture proxy(kOnePerClient);
  {
    RawClient leaving(proxy.port());
    leaving.write("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nonly part");
    ASSERT_TRUE(admin_shows(proxy.admin_port(), kPermitOf127, "\"remaining\":0"));
  }  // gone, 991 bytes short
  ASSERT_TRUE(admin_shows(proxy.admin_port(), kPermitOf127, "\"remaining\":1"));
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
}

TEST(ConcurrencyLimit, HoldsThePermitWhileTheUpstreamAnswersAnAbandonedRequest) {
  ProxyFixture proxy(kOnePerClient);
  {
    RawClient leaving(proxy.port());
    leaving.write("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n");
    while (proxy.upstream().requests() == 0) {
      std::this_thread::yield();
    }
  }  // gone while the upstream works on it
  // As nginx with proxy_ignore_client_abort: the upstream finishes the request (it may have
  // side effects) and the permit comes back with its answer, about a second later.
  ASSERT_TRUE(admin_shows(proxy.admin_port(), kPermitOf127, "\"remaining\":1"));
  EXPECT_EQ(proxy.send(get("/")).result(), http::status::ok);
}

TEST(Proxy, AnswersAnHttp10ClientInHttp10AndClosesAfterAnUnframedBody) {
  ProxyFixture proxy("routes: [{name: all}]");
  const std::string response = proxy.send_raw("GET /bytes/5 HTTP/1.0\r\nHost: a\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0U) << response;
  EXPECT_EQ(response.find("Transfer-Encoding"), std::string::npos) << response;
  EXPECT_NE(response.find("\r\n\r\nabcde"), std::string::npos) << response;
}

}  // namespace
}  // namespace sluice::test
