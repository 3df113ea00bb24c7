#include "proxy/admin/top_keys_endpoint.hpp"

#include <array>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <optional>
#include <string>

#include "proxy/pipeline/request_key.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;
using telemetry::HeavyHitters;

/// JSON text that is inert in any page it lands in: `<`, `>` and `&` (which a key's text may
/// hold: a claim, a certificate's subject) are written as \u escapes, the same characters to a
/// JSON reader, never markup to an HTML one.
std::string inert_json(const json::value& value) {
  const std::string text = json::serialize(value);
  std::string out;
  out.reserve(text.size() + 1);
  for (const char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  out += '\n';
  return out;
}

/// `counted_here`: whether this process's limiters hold the keys' counts (the memory store). A
/// shared store's counts are in it: `remaining` is then null rather than this process's idle
/// copy.
json::array keys_of(const live::Generation& generation, std::size_t limiter, std::size_t n,
                    limiter::TimePoint now, bool counted_here) {
  json::array keys;
  for (const telemetry::HeaviestKey& heavy : generation.heavy_hitters->heaviest(limiter, n, now)) {
    json::value remaining = nullptr;
    if (counted_here) {
      const std::optional<limiter::Status> state =
          generation.pipeline.peek_counted(limiter, heavy.instance, heavy.key, now);
      remaining = state ? state->remaining : 0;
    }
    keys.push_back(json::object{{"key", heavy.secret ? hashed_key_text(heavy.key) : heavy.text},
                                {"secret", heavy.secret},
                                {"requests", heavy.requests},
                                {"limited", heavy.limited},
                                {"remaining", std::move(remaining)}});
  }
  return keys;
}

}  // namespace

AdminResponse top_keys(const AdminRequest& request, const live::Generation& generation,
                       const http::LoopContext& context) {
  std::size_t n = 20;
  if (const std::optional<std::string_view> given = pipeline::query_value(request.query, "n")) {
    const std::string text = percent_decoded(*given);
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, n);
    if (error != std::errc{} || stop != end || n < 1 || n > kMaxTopKeys) {
      return problem(
          request, http::status::bad_request,
          "n: \"" + text + "\" is not a whole number from 1 to " + std::to_string(kMaxTopKeys));
    }
  }
  const config::ProxyConfig& config = *generation.config;
  std::optional<std::size_t> only;
  if (const std::optional<std::string_view> given =
          pipeline::query_value(request.query, "limiter")) {
    const std::string name = percent_decoded(*given);
    for (std::size_t i = 0; i < config.limiters.size(); ++i) {
      if (config.limiters[i].name == name) {
        only = i;
      }
    }
    if (!only) {
      return problem(request, http::status::not_found, "no limiter named " + name);
    }
  }
  if (!generation.heavy_hitters) {
    return problem(request, http::status::not_found,
                   config.limiters.empty() ? "no limiter is configured"
                                           : "heaviest keys are not tracked: top_keys is 0");
  }
  const limiter::TimePoint now = context.proxy.clock.now();
  const bool counted_here = !context.proxy.store->health().has_value();
  const auto window_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(HeavyHitters::kSpan).count();
  json::object answer;
  if (only) {
    answer = {{"limiter", config.limiters[*only].name},
              {"window_seconds", window_seconds},
              {"keys", keys_of(generation, *only, n, now, counted_here)}};
  } else {
    json::array limiters;
    for (std::size_t i = 0; i < config.limiters.size(); ++i) {
      limiters.push_back(json::object{{"limiter", config.limiters[i].name},
                                      {"keys", keys_of(generation, i, n, now, counted_here)}});
    }
    answer = {{"window_seconds", window_seconds}, {"limiters", std::move(limiters)}};
  }
  AdminResponse response =
      text_response(request, http::status::ok, inert_json(answer), "application/json");
  response.set(http::field::cache_control, "no-store");
  return response;
}

}  // namespace sluice::admin
