// Parameters given to one key at runtime, read as proxy.yaml's `overrides` are.
#include "config/runtime_parameters.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const limiter::LimiterOptions kWindow{
    .algorithm = limiter::AlgorithmKind::sliding_window, .limit = 100, .window = 1min};
const limiter::LimiterOptions kBucket{.algorithm = limiter::AlgorithmKind::token_bucket,
                                      .rate = {.permits = 10, .period = 1s},
                                      .burst = 20};

TEST(RuntimeParameters, AreLaidOverTheLimitersOwnWithTheConfigsUnits) {
  std::vector<std::string> problems;
  const auto window =
      read_runtime_parameters(R"({"limit": 1000, "window": "2h"})", kWindow, problems);
  ASSERT_TRUE(window.has_value());
  EXPECT_EQ(window->limit, 1000U);
  EXPECT_EQ(window->window, 2h);
  EXPECT_EQ(window->algorithm, limiter::AlgorithmKind::sliding_window);

  const auto bucket = read_runtime_parameters(R"({"rate":"5/200ms"})", kBucket, problems);
  ASSERT_TRUE(bucket.has_value());
  EXPECT_EQ(bucket->rate.permits, 5);
  EXPECT_EQ(bucket->rate.period, 200ms);
  EXPECT_EQ(bucket->burst, 20);  // kept from the limiter
  EXPECT_TRUE(problems.empty());
}

TEST(RuntimeParameters, NameEachParameterThatIsWrong) {
  std::vector<std::string> problems;
  EXPECT_FALSE(read_runtime_parameters(R"({"limit": 0})", kWindow, problems));
  EXPECT_THAT(problems, ElementsAre(HasSubstr("limit")));

  problems.clear();
  EXPECT_FALSE(read_runtime_parameters(R"({"rate": "5/s", "window": "soon"})", kWindow, problems));
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_THAT(problems[0] + problems[1], HasSubstr("rate"));
  EXPECT_THAT(problems[0] + problems[1], HasSubstr("window"));

  problems.clear();
  EXPECT_FALSE(read_runtime_parameters(R"({"lmit": 5})", kWindow, problems));
  EXPECT_THAT(problems, ElementsAre(HasSubstr("did you mean")));

  problems.clear();
  EXPECT_FALSE(read_runtime_parameters("{}", kBucket, problems));
  EXPECT_THAT(problems, ElementsAre(HasSubstr("rate, burst, warmup or cold_factor")));

  problems.clear();
  EXPECT_FALSE(read_runtime_parameters("[1, 2]", kBucket, problems));
  EXPECT_EQ(problems.size(), 1U);
}

}  // namespace
}  // namespace sluice::config
