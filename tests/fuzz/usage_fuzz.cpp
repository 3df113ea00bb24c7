// Responses as an upstream sends them, through the cost meter (proxy/cost/): the first byte picks
// where the cost is read (a header, a JSON path, the bytes, OpenAI's or Anthropic's usage, and
// which count), the second the Content-Type (JSON or an event stream, spelt several ways), the
// third how the body is cut; the rest is the body (for a header, its first line is the head's
// field and its second a trailer). Checks: no crash, leak or undefined behaviour; the body read
// whole, in pieces of every size and a byte at a time gives one reading, by a meter reused from
// input to input and by a new one; a reported cost is at most kMaxCost, an invalid one says why;
// bytes counts every byte. The same bytes go to with_usage_requested(): a rewritten request is a
// JSON object that asks for usage, and is not rewritten again.
#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/cost/response_meter.hpp"
#include "proxy/cost/usage_request.hpp"

namespace {

namespace cost = sluice::cost;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "usage_fuzz: %s\n", what);
    std::abort();
  }
}

const std::vector<std::string> kPaths[] = {{"usage", "total_tokens"}, {"a", "b"}, {}};
constexpr std::string_view kContentTypes[] = {"application/json", "text/event-stream",
                                              "Text/Event-Stream; charset=utf-8", ""};

cost::MeterSpec spec_of(std::uint8_t choice) {
  cost::MeterSpec spec;
  spec.kind = static_cast<cost::MeterSpec::Kind>(choice & 3);
  spec.usage = static_cast<cost::Usage>((choice >> 2) & 1);
  spec.count = static_cast<cost::UsageCount>(((choice >> 3) & 3) % 3);
  spec.path = kPaths[((choice >> 5) & 3) % 3];
  spec.header = "X-Cost";
  return spec;
}

/// The line of `text` from `at`, and where the next one starts.
std::string_view line_at(std::string_view text, std::size_t& at) {
  const std::size_t end = std::min(text.find('\n', at), text.size());
  const std::string_view line = text.substr(at, end - at);
  at = std::min(end + 1, text.size());
  return line;
}

/// How `meter` reads `body` in pieces of sizes drawn from `seed`; `seed` 0 reads it whole, 1 a
/// byte at a time.
cost::Reading read(cost::ResponseMeter& meter, const cost::MeterSpec& spec,
                   std::string_view content_type, std::string_view body, std::uint32_t seed) {
  meter.start(spec, content_type);
  std::size_t at = 0;
  const std::string_view field = line_at(body, at);
  const std::string_view trailer = line_at(body, at);
  meter.field("content-type", content_type);
  meter.field("x-cost", field);
  std::uint32_t state = seed;
  for (std::size_t offset = 0; offset < body.size();) {
    std::size_t size = body.size();
    if (seed == 1) {
      size = 1;
    } else if (seed != 0) {
      state = state * 1'103'515'245U + 12'345U;
      size = 1 + (state >> 16) % 97;
    }
    size = std::min(size, body.size() - offset);
    meter.body({body.data() + offset, size});
    offset += size;
  }
  if (seed % 2 == 1) {
    meter.trailer("X-COST", trailer);
  }
  return meter.finish();
}

void check_request_rewrite(std::string_view body) {
  const std::optional<std::string> rewritten = cost::with_usage_requested(body);
  if (!rewritten) {
    return;
  }
  boost::json::error_code ec;
  const boost::json::value request = boost::json::parse(*rewritten, ec);
  require(!ec && request.is_object(), "a rewritten request is not a JSON object");
  const boost::json::value* options = request.get_object().if_contains("stream_options");
  require(options != nullptr && options->is_object(), "a rewritten request without options");
  const boost::json::value* include = options->get_object().if_contains("include_usage");
  require(include != nullptr && include->is_bool() && include->get_bool(),
          "a rewritten request does not ask for usage");
  require(!cost::with_usage_requested(*rewritten), "a rewritten request is rewritten again");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  const cost::MeterSpec spec = spec_of(data[0]);
  const std::string_view content_type = kContentTypes[data[1] % std::size(kContentTypes)];
  const std::uint32_t seed = 2U + data[2] * 2U;  // even: the trailer goes with the odd seeds
  const std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);

  static cost::ResponseMeter reused;  // start() must forget the last input
  const cost::Reading whole = read(reused, spec, content_type, body, 0);
  cost::ResponseMeter fresh;
  require(read(fresh, spec, content_type, body, seed) == whole,
          "pieces read otherwise than the whole");
  if (body.size() <= 4096) {
    const cost::Reading trailed = read(fresh, spec, content_type, body, 1);
    require(read(reused, spec, content_type, body, seed + 1) == trailed,
            "pieces read otherwise than a byte at a time");
    if (spec.kind != cost::MeterSpec::Kind::header) {
      require(trailed == whole, "a trailer changed a reading that is not a header's");
    }
  }

  switch (whole.result) {
    case cost::Reading::Result::reported:
      require(whole.cost <= cost::kMaxCost && whole.why.empty(), "a reported cost out of range");
      break;
    case cost::Reading::Result::invalid:
      require(!whole.why.empty() && whole.cost == 0, "an invalid cost without its reason");
      break;
    case cost::Reading::Result::missing:
      require(whole.why.empty() && whole.cost == 0, "a missing cost with a value");
      break;
  }
  if (spec.kind == cost::MeterSpec::Kind::bytes) {
    require(whole.result == cost::Reading::Result::reported && whole.cost == body.size(),
            "bytes counted otherwise");
  }
  check_request_rewrite(body);
  return 0;
}
