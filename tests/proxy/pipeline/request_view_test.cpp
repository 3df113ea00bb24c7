// What the pipeline sees of a request: its path and query split at the first '?', and its
// headers found by name without regard to case, the first of several.
#include "proxy/pipeline/request_view.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::pipeline {
namespace {

RequestView view_of(std::string_view target, const std::vector<Header>& headers = {}) {
  return {.method = "GET", .target = target, .host = "h", .headers = headers, .peer = {}};
}

TEST(RequestView, SplitsPathAndQueryAtTheFirstQuestionMark) {
  EXPECT_EQ(view_of("/api/x?page=2").path(), "/api/x");
  EXPECT_EQ(view_of("/api/x?page=2").query(), "page=2");
  EXPECT_EQ(view_of("/api/x").path(), "/api/x");
  EXPECT_EQ(view_of("/api/x").query(), "");
  EXPECT_EQ(view_of("/a?b?c").path(), "/a");
  EXPECT_EQ(view_of("/a?b?c").query(), "b?c");
  EXPECT_EQ(view_of("/a?").path(), "/a");
  EXPECT_EQ(view_of("/a?").query(), "");
}

TEST(RequestView, FindsTheFirstHeaderOfANameWhateverItsCase) {
  const std::vector<Header> headers{{"X-Api-Key", "first"}, {"Host", "h"}, {"x-api-key", "second"}};
  const RequestView request = view_of("/", headers);
  ASSERT_NE(request.find_header("X-API-KEY"), nullptr);
  EXPECT_EQ(request.find_header("X-API-KEY"), &headers[0]);
  EXPECT_EQ(request.header("x-api-key"), "first");
  EXPECT_EQ(request.find_header("X-Missing"), nullptr);
  EXPECT_EQ(request.header("X-Missing"), "");
  EXPECT_EQ(request.header("X-Api"), "");  // a prefix is another name
}

}  // namespace
}  // namespace sluice::pipeline
