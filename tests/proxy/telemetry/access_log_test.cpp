// The access log's JSON lines: a request's own text cannot break them.
#include "proxy/telemetry/access_log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace sluice::telemetry {
namespace {

TEST(AccessLogJson, ParsesWhateverTheRequestSent) {
  const std::string target = "/a\"b\\c\nd\x01\x7f\xE2\x80\xA8\xFF\xC3\xA9";
  const AccessRecord record{.client = "2001:db8::1",
                            .method = "G\"ET",
                            .target = target,
                            .route = "r\\oute \"one\"",
                            .decision = MetricDecision::allowed,
                            .status = 200,
                            .key_hash = 0x1234,
                            .upstream = std::chrono::microseconds(250),
                            .total = std::chrono::microseconds(1500)};
  const std::string line = "{" + AccessLog::format(config::LogFormat::json, record);
  boost::json::error_code error;
  const boost::json::value json = boost::json::parse(line, error);
  ASSERT_FALSE(error) << error.message() << " in " << line;
  EXPECT_EQ(json.at("client").as_string(), "2001:db8::1");
  EXPECT_EQ(json.at("method").as_string(), "G\"ET");
  // The byte that is not UTF-8 reads back as U+FFFD; everything else as it was.
  EXPECT_EQ(json.at("target").as_string(), "/a\"b\\c\nd\x01\x7f\xE2\x80\xA8\xEF\xBF\xBD\xC3\xA9");
  EXPECT_EQ(json.at("route").as_string(), "r\\oute \"one\"");
  EXPECT_EQ(json.at("status").as_int64(), 200);
  EXPECT_EQ(json.at("duration_ms").as_double(), 1.5);
}

TEST(AccessLog, CountsTheLinesItDropsWhileItsOutputIsStuck) {
  // Standard output a pipe nobody reads for a while: the log's thread blocks on it, its queue
  // fills, and the oldest lines are dropped and counted; the event loops never wait.
  std::array<int, 2> pipe_ends{};
  ASSERT_EQ(::pipe(pipe_ends.data()), 0);
  std::fflush(stdout);
  const int saved_stdout = ::dup(STDOUT_FILENO);
  ASSERT_GE(saved_stdout, 0);
  ASSERT_GE(::dup2(pipe_ends[1], STDOUT_FILENO), 0);
  std::uint64_t dropped = 0;
  std::thread drain;
  {
    AccessLog log;
    AccessRecord record;
    record.client = "198.51.100.7";
    record.method = "GET";
    record.target = "/a";
    for (int i = 0; i < 20000; ++i) {  // more than the queue (8192) and the pipe (64 KiB) hold
      log.write(config::LogFormat::text, record);
    }
    dropped = log.dropped();
    // Unstuck: the pipe is read to its end, so the log's thread can finish.
    drain = std::thread([reader = pipe_ends[0]] {
      std::array<char, 65536> bytes;
      while (::read(reader, bytes.data(), bytes.size()) > 0) {
      }
    });
  }
  std::fflush(stdout);
  ::dup2(saved_stdout, STDOUT_FILENO);
  ::close(saved_stdout);
  ::close(pipe_ends[1]);
  drain.join();
  ::close(pipe_ends[0]);
  EXPECT_GT(dropped, 20000U - 8192U - 65536U / 40U);
}

TEST(AccessLog, ShowsTheQueryParametersLimitersKeyOnAsStars) {
  const std::vector<std::string> secret{"api_key", "token"};
  const auto target_of = [&secret](std::string_view target, config::LogFormat format) {
    const AccessRecord record{.client = "192.0.2.1",
                              .method = "GET",
                              .target = target,
                              .secret_query = secret,
                              .route = "r"};
    return AccessLog::format(format, record);
  };
  using enum config::LogFormat;
  EXPECT_NE(target_of("/a?page=2&api_key=k1&x&token=&api_key=k2&", json)
                .find(R"("target":"/a?page=2&api_key=***&x&token=***&api_key=***&")"),
            std::string::npos);
  EXPECT_NE(target_of("/a?api_key=k1", text).find("\"GET /a?api_key=***\""), std::string::npos);
  // Only the names themselves: a prefix, a suffix or the path is not one.
  EXPECT_NE(target_of("/api_key=k?my_api_key=k&api_keys=k", json)
                .find(R"("target":"/api_key=k?my_api_key=k&api_keys=k")"),
            std::string::npos);
  EXPECT_NE(target_of("/a?api_key=\"k", json).find(R"("target":"/a?api_key=***")"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::telemetry
