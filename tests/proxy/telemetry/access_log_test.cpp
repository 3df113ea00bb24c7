// The access log's JSON lines: a request's own text cannot break them.
#include "proxy/telemetry/access_log.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>
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
