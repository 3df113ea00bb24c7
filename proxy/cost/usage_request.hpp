#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::cost {

/// Request bodies larger than this are left alone: the proxy holds a body whole to rewrite it.
inline constexpr std::size_t kMaxRewrittenRequest = 1024 * 1024;

/// An OpenAI streaming request rewritten to ask for usage (a route's `include_usage: true`):
/// without `stream_options.include_usage`, a streamed chat completion says nothing of its cost.
/// For a JSON object with `"stream": true` whose `stream_options.include_usage` is not true,
/// returns the body with it set (other `stream_options` members kept), written compactly: the
/// members keep their order and values, not their spacing. Otherwise (not JSON, not an object,
/// not streaming, already set, `stream_options` neither an object nor null, larger than
/// kMaxRewrittenRequest) nullopt: the body goes as it came.
std::optional<std::string> with_usage_requested(std::string_view request_body);

}  // namespace sluice::cost
