// What `on_error` makes of a request Redis could not decide, in memory: let it pass uncounted,
// refuse it, or charge the memory limiters. Through the store, with Redis hung and killed, in
// redis_store_test.cpp (Policies/OnError.*).
#include "proxy/store/redis/on_error.hpp"

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"
#include "tests/support/pipeline_fixture.hpp"

namespace sluice::store::redis {
namespace {

using namespace std::chrono_literals;
using test::at;

const char* const kOnePerHour = R"(
upstream: http://127.0.0.1:9000
limiters:
  per-ip: {algorithm: fixed_window, limit: 1, window: 1h}
routes: [{name: api, limiters: [per-ip]}]
)";

TEST(RedisFallBack, AllowLetsThroughUncountedDenyRefusesLocalChargesTheMemoryLimiters) {
  test::PipelineFixture fixture(kOnePerHour);
  pipeline::Decision decision;
  pipeline::Charges charges;
  ASSERT_TRUE(fixture.pipeline().prepare(test::PipelineFixture::view_of({}), at(0s), std::nullopt,
                                         decision, charges));
  EXPECT_EQ(fall_back(config::OnStoreError::allow, charges, at(0s)).counted,
            pipeline::Counted::let_pass);
  EXPECT_EQ(fall_back(config::OnStoreError::deny, charges, at(0s)).counted,
            pipeline::Counted::refuse);
  const pipeline::ChargeResult first = fall_back(config::OnStoreError::local, charges, at(0s));
  EXPECT_EQ(first.counted, pipeline::Counted::yes);
  EXPECT_TRUE(first.live_admitted);
  const pipeline::ChargeResult second = fall_back(config::OnStoreError::local, charges, at(1s));
  EXPECT_FALSE(second.live_admitted);  // the memory limiter counted the first
}

}  // namespace
}  // namespace sluice::store::redis
