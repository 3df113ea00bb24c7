#include "proxy/cost/usage_request.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace sluice::cost {
namespace {

boost::json::value rewritten(std::string_view body) {
  const std::optional<std::string> request = with_usage_requested(body);
  if (!request) {
    ADD_FAILURE() << "not rewritten: " << body;
    return nullptr;
  }
  return boost::json::parse(*request);
}

TEST(WithUsageRequested, AsksAStreamingRequestForUsage) {
  EXPECT_EQ(rewritten(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],)"
                      R"("stream":true,"temperature":0.7})"),
            boost::json::parse(R"({"model":"gpt-4o-mini","messages":[{"role":"user",)"
                               R"("content":"Hi"}],"stream":true,"temperature":0.7,)"
                               R"("stream_options":{"include_usage":true}})"));
  EXPECT_EQ(*with_usage_requested(R"({"stream": true})"),
            R"({"stream":true,"stream_options":{"include_usage":true}})");
}

TEST(WithUsageRequested, KeepsTheOtherStreamOptions) {
  EXPECT_EQ(rewritten(R"({"stream":true,"stream_options":{"include_obfuscation":false}})"),
            boost::json::parse(R"({"stream":true,"stream_options":{"include_obfuscation":false,)"
                               R"("include_usage":true}})"));
  EXPECT_EQ(rewritten(R"({"stream":true,"stream_options":{"include_usage":false}})"),
            boost::json::parse(R"({"stream":true,"stream_options":{"include_usage":true}})"));
  EXPECT_EQ(rewritten(R"({"stream":true,"stream_options":null})"),
            boost::json::parse(R"({"stream":true,"stream_options":{"include_usage":true}})"));
}

TEST(WithUsageRequested, LeavesEveryOtherBodyAlone) {
  for (const std::string_view body : {
           R"({"stream":true,"stream_options":{"include_usage":true}})",  // already
           R"({"model":"gpt-4o-mini","messages":[]})",                    // not streaming
           R"({"stream":false})",
           R"({"stream":"true"})",
           R"({"stream":1})",
           R"({"stream":true,"stream_options":"usage"})",  // the upstream's to refuse
           R"([{"stream":true}])",
           R"("stream")",
           R"({"stream":true)",
           R"({"stream":true} {})",
           "",
           "stream=true",
       }) {
    EXPECT_EQ(with_usage_requested(body), std::nullopt) << body;
  }
}

TEST(WithUsageRequested, LeavesBodiesLargerThanItsBoundAlone) {
  const std::string prefix = R"({"stream":true,"messages":[{"content":")";
  const std::string suffix = R"("}]})";
  std::string body =
      prefix + std::string(kMaxRewrittenRequest - prefix.size() - suffix.size(), 'x') + suffix;
  ASSERT_EQ(body.size(), kMaxRewrittenRequest);
  EXPECT_NE(with_usage_requested(body), std::nullopt);
  body.insert(prefix.size(), "x");
  EXPECT_EQ(with_usage_requested(body), std::nullopt);
}

}  // namespace
}  // namespace sluice::cost
