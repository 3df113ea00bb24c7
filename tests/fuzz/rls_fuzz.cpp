// A ShouldRateLimit call's request body (Envoy's rate-limit service, proxy/rls/) as a client
// sends it: the body's one gRPC message unframed, and parsed. Checks: no crash, leak or
// undefined behaviour; a message is within the cap and is the body less its prefix; a request
// parses alike into a request reused from input to input and into a new one; a parsed request
// serialized and framed again unframes to the same bytes; an answer built from it (a status per
// descriptor, the domain as the body, the first entry as a header) encodes to a message that
// unframes (or is too large, past the cap) and parses back equal.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proxy/rls/rls_messages.hpp"

namespace {

namespace rls = sluice::rls;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "rls_fuzz: %s\n", what);
    std::abort();
  }
}

rls::RateLimitResponse answer_to(const rls::RateLimitRequest& request) {
  rls::RateLimitResponse response;
  response.set_overall_code(rls::RateLimitResponse::OK);
  for (const auto& descriptor : request.descriptors()) {
    auto* status = response.add_statuses();
    status->set_code(descriptor.entries_size() % 2 == 0 ? rls::RateLimitResponse::OK
                                                        : rls::RateLimitResponse::OVER_LIMIT);
    status->mutable_current_limit()->set_requests_per_unit(request.hits_addend());
    status->mutable_current_limit()->set_unit(rls::RateLimitResponse::RateLimit::HOUR);
    status->set_limit_remaining(descriptor.limit().requests_per_unit());
    rls::set_duration(std::chrono::nanoseconds(request.hits_addend()) * 1'000'003,
                      *status->mutable_duration_until_reset());
    if (status->code() == rls::RateLimitResponse::OVER_LIMIT) {
      response.set_overall_code(rls::RateLimitResponse::OVER_LIMIT);
    }
  }
  response.set_raw_body(request.domain());
  if (request.descriptors_size() > 0 && request.descriptors(0).entries_size() > 0) {
    auto* header = response.add_response_headers_to_add();
    header->set_key(request.descriptors(0).entries(0).key());
    header->set_value(request.descriptors(0).entries(0).value());
  }
  return response;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (rls::discard_protobuf_log(), true);
  (void)quiet;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const rls::Unframed unframed = rls::unframe_request(body);
  if (unframed.framing != rls::Framing::one_message) {
    require(unframed.message.empty(), "a message with a framing problem");
    require(rls::grpc_status_of(unframed.framing) != 0, "a framing problem answered OK");
    return 0;
  }
  require(unframed.message.size() <= rls::kMaxMessageBytes, "a message past the cap");
  require(unframed.message.data() == body.data() + rls::kPrefixBytes &&
              unframed.message.size() + rls::kPrefixBytes == body.size(),
          "a message that is not the body less its prefix");

  static rls::RateLimitRequest reused;  // parse_request must forget the last input
  rls::RateLimitRequest fresh;
  const bool parsed = rls::parse_request(unframed.message, reused);
  require(rls::parse_request(unframed.message, fresh) == parsed, "parsed otherwise when reused");
  if (!parsed) {
    return 0;
  }
  const std::string serialized = fresh.SerializeAsString();
  require(reused.SerializeAsString() == serialized, "a reused request reads otherwise");

  std::string framed(rls::kPrefixBytes, '\0');
  framed[1] = static_cast<char>(serialized.size() >> 24 & 0xff);
  framed[2] = static_cast<char>(serialized.size() >> 16 & 0xff);
  framed[3] = static_cast<char>(serialized.size() >> 8 & 0xff);
  framed[4] = static_cast<char>(serialized.size() & 0xff);
  framed += serialized;
  const rls::Unframed again = rls::unframe_request(framed);
  if (serialized.size() <= rls::kMaxMessageBytes) {
    require(again.framing == rls::Framing::one_message && again.message == serialized,
            "a request framed again unframes otherwise");
  } else {
    require(again.framing == rls::Framing::too_large, "a request framed again past the cap");
  }

  const rls::RateLimitResponse response = answer_to(fresh);
  static std::string out;  // encode_response must overwrite the last answer
  rls::encode_response(response, out);
  const rls::Unframed answer = rls::unframe_request(out);
  if (out.size() - rls::kPrefixBytes > rls::kMaxMessageBytes) {
    require(answer.framing == rls::Framing::too_large, "an answer past the cap");
    return 0;
  }
  require(answer.framing == rls::Framing::one_message, "an answer that does not unframe");
  rls::RateLimitResponse decoded;
  require(decoded.ParseFromArray(answer.message.data(), static_cast<int>(answer.message.size())),
          "an answer that does not parse");
  require(decoded.SerializeAsString() == response.SerializeAsString(),
          "an answer that parses otherwise");
  return 0;
}
