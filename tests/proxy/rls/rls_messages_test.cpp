#include "proxy/rls/rls_messages.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <string_view>

#include "tests/support/counted_new.hpp"

namespace sluice::rls {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using namespace std::string_view_literals;
using RateLimit = RateLimitResponse::RateLimit;
using limiter::AlgorithmKind;
using limiter::Calendar;
using limiter::LimiterOptions;

// -- framing --------------------------------------------------------------------------------------

TEST(UnframeRequest, TakesTheOneMessage) {
  EXPECT_EQ(unframe_request("\0\0\0\0\3abc"sv), (Unframed{Framing::one_message, "abc"}));
  // An empty message is a message: a request with every field at its default.
  const Unframed empty = unframe_request("\0\0\0\0\0"sv);
  EXPECT_EQ(empty.framing, Framing::one_message);
  EXPECT_EQ(empty.message.size(), 0U);
  // The length is big-endian: 0x00000102 = 258 bytes.
  const std::string body = "\0\0\0\1\2"s + std::string(258, 'x');
  EXPECT_EQ(unframe_request(body), (Unframed{Framing::one_message, std::string(258, 'x')}));
}

TEST(UnframeRequest, SaysWhatIsWrongWithABody) {
  EXPECT_EQ(unframe_request("").framing, Framing::empty);
  EXPECT_EQ(unframe_request("\0"sv).framing, Framing::truncated);
  EXPECT_EQ(unframe_request("\0\0\0\0"sv).framing, Framing::truncated);
  EXPECT_EQ(unframe_request("\0\0\0\0\4abc"sv).framing, Framing::truncated);
  EXPECT_EQ(unframe_request("\1\0\0\0\3abc"sv).framing, Framing::compressed);
  EXPECT_EQ(unframe_request("\1\0\0"sv).framing, Framing::truncated);
  EXPECT_EQ(unframe_request("\2\0\0\0\0"sv).framing, Framing::bad_flag);
  EXPECT_EQ(unframe_request("\x80\0\0\0\0"sv).framing, Framing::bad_flag);
  EXPECT_EQ(unframe_request("\0\0\0\0\1a\0\0\0\0\1b"sv).framing, Framing::more_messages);
  EXPECT_EQ(unframe_request("\0\0\0\0\1a\0\0\0\0\0"sv).framing, Framing::more_messages);
  EXPECT_EQ(unframe_request("\0\0\0\0\1a\0"sv).framing, Framing::trailing_bytes);
  EXPECT_EQ(unframe_request("\0\0\0\0\1a\0\0\0\0\2b"sv).framing, Framing::trailing_bytes);
  // The unread message's announced length alone decides: no 4 GiB wait, no overflow.
  EXPECT_EQ(unframe_request("\0\xff\xff\xff\xff"sv).framing, Framing::too_large);
}

TEST(UnframeRequest, CapsTheMessageAt64KiB) {
  static_assert(kMaxMessageBytes == 65'536);
  const std::string largest = "\0\0\1\0\0"s + std::string(65'536, 'x');
  EXPECT_EQ(unframe_request(largest).framing, Framing::one_message);
  EXPECT_EQ(unframe_request(largest).message.size(), 65'536U);
  EXPECT_EQ(largest.size(), kMaxRequestBodyBytes);
  const std::string over = "\0\0\1\0\1"s + std::string(65'537, 'x');
  EXPECT_EQ(unframe_request(over).framing, Framing::too_large);
  EXPECT_EQ(unframe_request("\0\0\1\0\1"sv).framing, Framing::too_large);
}

TEST(UnframeRequest, MapsEachProblemToAGrpcStatus) {
  EXPECT_EQ(grpc_status_of(Framing::one_message), 0);
  EXPECT_EQ(grpc_status_of(Framing::compressed), 12);  // UNIMPLEMENTED
  EXPECT_EQ(grpc_status_of(Framing::too_large), 8);    // RESOURCE_EXHAUSTED
  for (const Framing framing : {Framing::empty, Framing::truncated, Framing::bad_flag,
                                Framing::more_messages, Framing::trailing_bytes}) {
    EXPECT_EQ(grpc_status_of(framing), 3) << name_of(framing);  // INVALID_ARGUMENT
  }
  EXPECT_EQ(name_of(Framing::more_messages), "more than one message");
}

// -- requests -------------------------------------------------------------------------------------

TEST(ParseRequest, ReadsEnvoysFieldNumbers) {
  // domain (1) "d", descriptors (2) [{entries (1) [{key (1) "k", value (2) "v"}], limit (2)
  // {requests_per_unit (1) 5, unit (2) MINUTE}}], hits_addend (3) 3.
  const std::string_view message =
      "\x0a\x01"
      "d"
      "\x12\x0e\x0a\x06\x0a\x01k\x12\x01v\x12\x04\x08\x05\x10\x02"
      "\x18\x03"sv;
  RateLimitRequest request;
  ASSERT_TRUE(parse_request(message, request));
  EXPECT_EQ(request.domain(), "d");
  ASSERT_EQ(request.descriptors_size(), 1);
  const auto& descriptor = request.descriptors(0);
  ASSERT_EQ(descriptor.entries_size(), 1);
  EXPECT_EQ(descriptor.entries(0).key(), "k");
  EXPECT_EQ(descriptor.entries(0).value(), "v");
  ASSERT_TRUE(descriptor.has_limit());
  EXPECT_EQ(descriptor.limit().requests_per_unit(), 5U);
  EXPECT_EQ(descriptor.limit().unit(), envoy::type::v3::MINUTE);
  EXPECT_EQ(request.hits_addend(), 3U);
}

RateLimitRequest example_request() {
  RateLimitRequest request;
  request.set_domain("edge-proxy-production");
  for (const auto& [key, value] : {std::pair{"remote_address", "2001:db8:85a3::8a2e:370:7334"},
                                   std::pair{"destination_cluster", "checkout-service-v2"}}) {
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(key);
    entry->set_value(value);
  }
  request.mutable_descriptors(1)->add_entries()->set_key("authenticated_client_identifier");
  request.mutable_descriptors(1)->mutable_entries(1)->set_value("tenant-00042-production");
  request.set_hits_addend(7);
  return request;
}

TEST(ParseRequest, RoundTripsARequestTheGeneratedCodeEncoded) {
  const RateLimitRequest sent = example_request();
  std::string body = sent.SerializeAsString();
  const auto size = static_cast<unsigned char>(body.size());
  ASSERT_LT(body.size(), 256U);
  body.insert(0, "\0\0\0\0"sv);
  body.insert(4, 1, static_cast<char>(size));

  const Unframed unframed = unframe_request(body);
  ASSERT_EQ(unframed.framing, Framing::one_message);
  RateLimitRequest received;
  received.set_domain("left over from an earlier call");
  received.add_descriptors()->add_entries()->set_key("stale");
  ASSERT_TRUE(parse_request(unframed.message, received));
  EXPECT_EQ(received.SerializeAsString(), sent.SerializeAsString());
  EXPECT_EQ(received.domain(), "edge-proxy-production");
  ASSERT_EQ(received.descriptors_size(), 2);
  EXPECT_EQ(received.descriptors(1).entries(1).value(), "tenant-00042-production");
  EXPECT_EQ(received.hits_addend(), 7U);
}

TEST(ParseRequest, RefusesBytesThatAreNotARequest) {
  RateLimitRequest request;
  EXPECT_FALSE(
      parse_request("\x0a\x05"
                    "ab"sv,
                    request));                                     // a string cut short
  EXPECT_FALSE(parse_request("\x12\x03\xff\xff\xff"sv, request));  // a descriptor of junk
  EXPECT_FALSE(parse_request("\x00"sv, request));                  // field number 0
}

TEST(ParseRequest, RefusesStringsThatAreNotUtf8Quietly) {
  RateLimitRequest request;
  discard_protobuf_log();
  testing::internal::CaptureStderr();
  // domain (1) "\xff"; an entry's value (2) "\xc3" (a sequence cut short).
  EXPECT_FALSE(parse_request("\x0a\x01\xff"sv, request));
  EXPECT_FALSE(parse_request("\x12\x05\x0a\x03\x12\x01\xc3"sv, request));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(parse_request("\x0a\x02\xc3\xa9"sv, request));  // "é"
  EXPECT_EQ(request.domain(), "\xc3\xa9");
}

TEST(ParseRequest, AWarmRequestParsesWithoutAllocating) {
  const std::string message = example_request().SerializeAsString();
  RateLimitRequest reused;
  // Cold, it allocates the descriptors, the entries and the strings longer than 15 bytes.
  EXPECT_GE(test::allocations_during([&] { ASSERT_TRUE(parse_request(message, reused)); }), 8U);
  EXPECT_EQ(test::allocations_during([&] { ASSERT_TRUE(parse_request(message, reused)); }), 0U);
  EXPECT_EQ(reused.descriptors(1).entries(1).value(), "tenant-00042-production");
}

// -- responses ------------------------------------------------------------------------------------

TEST(EncodeResponse, WritesEnvoysBytes) {
  RateLimitResponse response;
  response.set_overall_code(RateLimitResponse::OVER_LIMIT);
  auto* status = response.add_statuses();
  status->set_code(RateLimitResponse::OVER_LIMIT);
  status->mutable_current_limit()->set_requests_per_unit(10);
  status->mutable_current_limit()->set_unit(RateLimit::MINUTE);
  status->set_limit_remaining(0);
  set_duration(30s, *status->mutable_duration_until_reset());
  auto* header = response.add_response_headers_to_add();
  header->set_key("a");
  header->set_value("b");
  response.set_raw_body("no");

  std::string out = "a longer string left from an earlier response, whose capacity is kept";
  const std::size_t capacity = out.capacity();
  encode_response(response, out);
  // Flag 0, length 28; overall_code (1) 2; statuses (2) {code (1) 2, current_limit (2)
  // {requests_per_unit (1) 10, unit (2) 2}, duration_until_reset (4) {seconds (1) 30}};
  // response_headers_to_add (3) {key (1) "a", value (2) "b"}; raw_body (5) "no".
  EXPECT_EQ(out,
            "\0\0\0\0\x1c"
            "\x08\x02"
            "\x12\x0c\x08\x02\x12\x04\x08\x0a\x10\x02\x22\x02\x08\x1e"
            "\x1a\x06\x0a\x01"
            "a\x12\x01"
            "b"
            "\x2a\x02no"sv);
  EXPECT_EQ(out.capacity(), capacity);

  response.Clear();
  response.set_overall_code(RateLimitResponse::OK);
  encode_response(response, out);
  EXPECT_EQ(out, "\0\0\0\0\2\x08\x01"sv);
}

TEST(EncodeResponse, PrefixesLongMessagesWithTheirBigEndianLength) {
  RateLimitResponse response;
  response.set_raw_body(std::string(300, 'x'));  // tag, 2-byte varint 300, 300 bytes: 303
  std::string out;
  encode_response(response, out);
  ASSERT_EQ(out.size(), 308U);
  EXPECT_EQ(out.substr(0, 8), "\0\0\0\x01\x2f\x2a\xac\x02"sv);
}

TEST(SetDuration, SplitsSecondsAndNanoseconds) {
  google::protobuf::Duration duration;
  set_duration(1500ms, duration);
  EXPECT_EQ(duration.seconds(), 1);
  EXPECT_EQ(duration.nanos(), 500'000'000);
  set_duration(250ms, duration);
  EXPECT_EQ(duration.seconds(), 0);
  EXPECT_EQ(duration.nanos(), 250'000'000);
  set_duration(-1500ms, duration);
  EXPECT_EQ(duration.seconds(), -1);
  EXPECT_EQ(duration.nanos(), -500'000'000);
  set_duration(std::chrono::hours(24 * 365) + 1ns, duration);
  EXPECT_EQ(duration.seconds(), 31'536'000);
  EXPECT_EQ(duration.nanos(), 1);
}

// -- current_limit --------------------------------------------------------------------------------

LimiterOptions window(std::uint64_t limit, limiter::Duration length,
                      AlgorithmKind algorithm = AlgorithmKind::fixed_window) {
  LimiterOptions options;
  options.algorithm = algorithm;
  options.limit = limit;
  options.window = length;
  return options;
}

LimiterOptions calendar(std::uint64_t limit, Calendar unit) {
  LimiterOptions options = window(limit, {});
  options.calendar = unit;
  return options;
}

LimiterOptions bucket(double permits, limiter::Duration period,
                      AlgorithmKind algorithm = AlgorithmKind::token_bucket) {
  LimiterOptions options;
  options.algorithm = algorithm;
  options.rate = {permits, period};
  return options;
}

CurrentLimit limit_of(std::uint32_t requests, RateLimitUnit unit) { return {requests, unit}; }

}  // namespace

void PrintTo(const CurrentLimit& limit, std::ostream* out) {
  *out << limit.requests_per_unit << " per " << RateLimit::Unit_Name(limit.unit);
}

namespace {

TEST(CurrentLimit, IsExactWhenTheWindowIsAUnit) {
  EXPECT_EQ(current_limit(window(100, 1min)), limit_of(100, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(window(5, 1h, AlgorithmKind::sliding_window)),
            limit_of(5, RateLimit::HOUR));
  EXPECT_EQ(current_limit(window(7, 1s, AlgorithmKind::sliding_log)),
            limit_of(7, RateLimit::SECOND));
  EXPECT_EQ(current_limit(window(9, 24h, AlgorithmKind::wheel)), limit_of(9, RateLimit::DAY));
  EXPECT_EQ(current_limit(window(3, 30 * 24h)), limit_of(3, RateLimit::MONTH));
  EXPECT_EQ(current_limit(window(3, 365 * 24h)), limit_of(3, RateLimit::YEAR));
  EXPECT_EQ(current_limit(calendar(1000, Calendar::day)), limit_of(1000, RateLimit::DAY));
  EXPECT_EQ(current_limit(calendar(10'000, Calendar::month)), limit_of(10'000, RateLimit::MONTH));
  EXPECT_EQ(current_limit(calendar(12, Calendar::year)), limit_of(12, RateLimit::YEAR));
  EXPECT_EQ(current_limit(bucket(10, 1s)), limit_of(10, RateLimit::SECOND));
  EXPECT_EQ(current_limit(bucket(50, 1min, AlgorithmKind::leaky_bucket)),
            limit_of(50, RateLimit::MINUTE));
}

TEST(CurrentLimit, IsTheLongRunRateInTheSmallestUnitWhereItIsWhole) {
  EXPECT_EQ(current_limit(window(100, 10s)), limit_of(10, RateLimit::SECOND));
  EXPECT_EQ(current_limit(window(1, 4s)), limit_of(15, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(window(100, 2s)), limit_of(50, RateLimit::SECOND));
  EXPECT_EQ(current_limit(window(1, 2s)), limit_of(30, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(bucket(5, 200ms)), limit_of(25, RateLimit::SECOND));
  EXPECT_EQ(current_limit(bucket(0.5, 1s)), limit_of(30, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(bucket(2.5, 1s)), limit_of(150, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(bucket(1, 3min)), limit_of(20, RateLimit::HOUR));
  // A week is no unit of Envoy's: 700 a week is 100 a day; 10 a week is 521.4 a year.
  EXPECT_EQ(current_limit(calendar(700, Calendar::week)), limit_of(100, RateLimit::DAY));
  EXPECT_EQ(current_limit(calendar(10, Calendar::week)), limit_of(521, RateLimit::YEAR));
  // Never whole: per YEAR, rounded down (7 × 31,536,000 / 11 = 20,068,363.6), at least 1.
  EXPECT_EQ(current_limit(window(7, 11s)), limit_of(20'068'363, RateLimit::YEAR));
  EXPECT_EQ(current_limit(window(1, 2 * 365 * 24h)), limit_of(1, RateLimit::YEAR));
}

TEST(CurrentLimit, KeepsZeroAndSaturates) {
  EXPECT_EQ(current_limit(window(0, 1min)), limit_of(0, RateLimit::MINUTE));
  EXPECT_EQ(current_limit(window(0, 10s)), limit_of(0, RateLimit::SECOND));
  EXPECT_EQ(current_limit(window(5'000'000'000, 1s)), limit_of(4'294'967'295U, RateLimit::SECOND));
  EXPECT_EQ(current_limit(bucket(1e12, 10s)), limit_of(4'294'967'295U, RateLimit::SECOND));
}

TEST(CurrentLimit, ConcurrencyHasNoUnit) {
  LimiterOptions options;
  options.algorithm = AlgorithmKind::concurrency;
  options.limit = 10;
  EXPECT_EQ(current_limit(options), std::nullopt);
}

TEST(CurrentLimit, UsesEnvoyRatelimitsUnitLengths) {
  EXPECT_EQ(seconds_in(RateLimit::SECOND), 1);
  EXPECT_EQ(seconds_in(RateLimit::MINUTE), 60);
  EXPECT_EQ(seconds_in(RateLimit::HOUR), 3'600);
  EXPECT_EQ(seconds_in(RateLimit::DAY), 86'400);
  EXPECT_EQ(seconds_in(RateLimit::MONTH), 2'592'000);
  EXPECT_EQ(seconds_in(RateLimit::YEAR), 31'536'000);
  EXPECT_EQ(seconds_in(RateLimit::UNKNOWN), 0);
}

}  // namespace
}  // namespace sluice::rls
