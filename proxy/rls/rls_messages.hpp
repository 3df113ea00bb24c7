#pragma once

#include <envoy/service/ratelimit/v3/rls.pb.h>
#include <google/protobuf/duration.pb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "limiter/limiter_options.hpp"
#include "limiter/time.hpp"

namespace sluice::rls {

using RateLimitRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RateLimitResponse = envoy::service::ratelimit::v3::RateLimitResponse;
using RateLimitUnit = envoy::service::ratelimit::v3::RateLimitResponse::RateLimit::Unit;

/// gRPC's prefix of a length-prefixed message: a compressed flag byte, then the message's length
/// as a 4-byte big-endian unsigned integer.
inline constexpr std::size_t kPrefixBytes = 5;

/// The largest request message accepted. Envoy's requests are a domain and a few descriptors of
/// short entries, a few hundred bytes. The cap bounds what one stream makes the loop buffer and
/// parse to what a real client never reaches (gRPC's own default, 4 MiB, is for any message of
/// any service).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
/// The largest request body worth reading on: a prefix and a message of kMaxMessageBytes.
inline constexpr std::size_t kMaxRequestBodyBytes = kPrefixBytes + kMaxMessageBytes;

/// What a unary call's request body holds (gRPC over HTTP/2, "Length-Prefixed-Message").
enum class Framing : std::uint8_t {
  one_message,     ///< Exactly one uncompressed message: Unframed::message.
  empty,           ///< No bytes: the call ended without its request.
  truncated,       ///< The prefix, or the message it announces, is cut short.
  compressed,      ///< Flag 1: sluice accepts no grpc-encoding, so no compressed message.
  bad_flag,        ///< A flag byte other than 0 or 1.
  too_large,       ///< A message announced longer than kMaxMessageBytes.
  more_messages,   ///< A second whole message follows the first: a unary call has one.
  trailing_bytes,  ///< Bytes after the message that are not a whole message.
};

/// A short static text for a log line ("compressed").
std::string_view name_of(Framing framing) noexcept;

/// The gRPC status code a call whose body is `framing` is answered with: UNIMPLEMENTED (12) for
/// a compressed message (a grpc-encoding the server does not support), RESOURCE_EXHAUSTED (8)
/// for one too large, INVALID_ARGUMENT (3) for the other malformed bodies (gRPC's own servers
/// say INTERNAL; the client sent what is no request, and the decision service says so), and
/// OK (0) for one_message.
std::uint8_t grpc_status_of(Framing framing) noexcept;

struct Unframed {
  Framing framing = Framing::empty;
  std::string_view message;  ///< With one_message: the message's bytes, a view into the body.

  bool operator==(const Unframed&) const = default;
};

/// The one message of a unary call's whole request body.
Unframed unframe_request(std::string_view body) noexcept;

/// Parses the message bytes `message` into `request`, replacing what it held; false when they
/// are not a RateLimitRequest (INTERNAL for the caller). Keep one request per event loop and
/// parse every call into it: protobuf keeps the elements of cleared repeated fields and the
/// capacity of cleared strings, so once warmed a parse allocates only for a request with more
/// descriptors or entries, or longer strings, than any before it.
/// Strings are checked as protobuf checks proto3's (and envoyproxy/ratelimit's Go server does):
/// a key, value or domain that is not UTF-8 fails the parse.
bool parse_request(std::string_view message, RateLimitRequest& request);

/// Protobuf writes a line to stderr for every message it refuses for a string that is not UTF-8,
/// so a client could fill the log with them: this drops protobuf's log messages, process-wide (a
/// refused request is the caller's to count). Called once, before serving.
void discard_protobuf_log() noexcept;

/// `response` as a gRPC length-prefixed message (flag 0, the length, the message), written over
/// `out`: a string kept by the caller and reused keeps its capacity.
void encode_response(const RateLimitResponse& response, std::string& out);

/// Envoy's RateLimit.{requests_per_unit, unit}.
struct CurrentLimit {
  std::uint32_t requests_per_unit = 0;
  RateLimitUnit unit = envoy::service::ratelimit::v3::RateLimitResponse::RateLimit::UNKNOWN;

  bool operator==(const CurrentLimit&) const = default;
};

/// Seconds in Envoy's units, as envoyproxy/ratelimit counts them: a MONTH is 30 days, a YEAR 365.
std::int64_t seconds_in(RateLimitUnit unit) noexcept;

/// A limiter's limit in Envoy's terms. A window's limit per window (a calendar window's per day,
/// month or year), or a bucket's rate, is exact when the window or the rate's period is one unit
/// (a calendar week is not one of these units) and the count is whole. Otherwise it is the
/// limiter's long-run rate in the smallest unit, SECOND to YEAR, in which it is a whole number of
/// at least 1 (1 per 4 s: 15 per MINUTE; 10 per week: 521 per YEAR, rounded down), else per YEAR
/// rounded down and at least 1. A limit of 0 is 0 in the window's unit, or per SECOND. Counts above
/// 2^32 - 1 are that. Concurrency limiters have no unit, nor options without a window or period:
/// nullopt.
std::optional<CurrentLimit> current_limit(const limiter::LimiterOptions& options) noexcept;

/// Writes `duration` to `out` as protobuf's Duration: whole seconds, and the nanoseconds left,
/// with the same sign.
void set_duration(limiter::Duration duration, google::protobuf::Duration& out) noexcept;

}  // namespace sluice::rls
