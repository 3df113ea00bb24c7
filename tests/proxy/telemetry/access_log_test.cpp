// The access log's JSON lines: a request's own text cannot break them.
#include "proxy/telemetry/access_log.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

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

}  // namespace
}  // namespace sluice::telemetry
