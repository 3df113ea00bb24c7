#include "proxy/replay/replayer.hpp"

#include <algorithm>
#include <boost/json/serializer.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "limiter/key_hash.hpp"
#include "proxy/pipeline/request_key.hpp"
#include "proxy/pipeline/wait_seconds.hpp"

namespace sluice::replay {
namespace {

using limiter::Duration;
using limiter::TimePoint;

/// The shortest fixed-point text that reads back as `value` (1700000000.1, never 1.7e+09). A
/// value whose fixed-point text would not fit (1e-121, from a log's odd "t") takes the shortest
/// text of any notation, which fits and is JSON too.
void append_number(std::string& out, double value) {
  char text[48];
  auto result = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed);
  if (result.ec != std::errc{}) {
    result = std::to_chars(text, text + sizeof text, value);
  }
  out.append(text, result.ptr);
}

void append_number(std::string& out, std::uint64_t value) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof text, value);
  out.append(text, result.ptr);
}

/// `text` as a JSON string. Names are nearly always printable ASCII without quotes or
/// backslashes, which JSON holds as it is; anything else goes through Boost.JSON's serializer.
void append_string(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= ' ' && c <= '~' && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  boost::json::serializer serializer;
  serializer.reset(text);
  char buffer[256];
  do {
    const boost::json::string_view part = serializer.read(buffer);
    out.append(part.data(), part.size());
  } while (!serializer.done());
}

double seconds(Duration duration) { return static_cast<double>(duration.count()) / 1e9; }

}  // namespace

Replayer::Replayer(const config::ProxyConfig& config, InputFormat format)
    : pipeline_(config), summary_(config), format_(format) {}

void Replayer::release_due(TimePoint now) {
  while (!releases_.empty() && releases_.top().at <= now) {
    const pipeline::Permit& permit = releases_.top().permit;
    permit.limiter->release(permit.key, permit.cost);
    releases_.pop();
  }
  while (!settlements_.empty() && settlements_.top().at <= now) {
    const PendingSettlement& due = settlements_.top();
    pipeline::Pipeline::settle_locally(*due.route, {due.later.data(), due.count}, due.said, due.at);
    settlements_.pop();
  }
}

TimePoint Replayer::response_end(const pipeline::Decision& decision, TimePoint now) const {
  const auto in_flight = Duration(std::llround(record_.duration * 1e9));
  // A response that ends beyond the end of the clock never ends.
  return limiter::saturating_add(limiter::saturating_add(now, decision.hold), in_flight);
}

void Replayer::hold_later_charges(const pipeline::Decision& decision, TimePoint now) {
  if (decision.later_count == 0) {
    return;
  }
  const config::CostFrom* from = decision.route->cost_from ? &*decision.route->cost_from : nullptr;
  std::optional<limiter::Permits> cost = record_.response_cost;
  if (!cost && record_.response_bytes && from && from->source == config::CostFrom::Source::bytes) {
    cost = static_cast<limiter::Permits>(std::min<std::uint64_t>(
        *record_.response_bytes, std::numeric_limits<limiter::Permits>::max()));
  }
  PendingSettlement settlement{.at = response_end(decision, now),
                               .route = decision.route,
                               .later = decision.later,
                               .count = decision.later_count,
                               .said = {.status = record_.status, .cost = cost}};
  if (settlement.at <= now) {
    pipeline::Pipeline::settle_locally(
        *settlement.route, {settlement.later.data(), settlement.count}, settlement.said, now);
  } else {
    settlements_.push(settlement);
  }
}

void Replayer::hold_permits(const pipeline::Decision& decision, TimePoint now) {
  // A permit held beyond the end of the clock is never given back.
  const TimePoint done = response_end(decision, now);
  for (std::size_t i = 0; i < decision.permit_count; ++i) {
    if (done <= now) {
      decision.permits[i].limiter->release(decision.permits[i].key, decision.permits[i].cost);
    } else {
      releases_.push({done, decision.permits[i]});
    }
  }
}

std::string Replayer::key_label(const pipeline::LimiterReport& report,
                                const pipeline::RequestView& request,
                                const pipeline::Decision& decision) {
  const config::LimiterConfig& limiter = *report.limiter;
  pipeline::build_key(limiter.key, limiter.ipv6_prefix, request, decision.client,
                      decision.route->name, decision.auth.identity.get(), key_text_);
  const bool secret = std::any_of(limiter.key.parts.begin(), limiter.key.parts.end(),
                                  [](const config::KeyPart& part) { return part.secret(); });
  std::string label = limiter.name + " ";
  if (secret) {
    // A fixed seed, so that a key has the same label in every replay of a log.
    char hex[17];
    const auto end = std::to_chars(hex, hex + 16, limiter::hash_key(key_text_, 0x5157u), 16).ptr;
    label += "#" + std::string(hex, end);
  } else {
    for (const char c : key_text_) {
      label += c == pipeline::kKeyPartSeparator ? '+' : c;
    }
  }
  return label;
}

void Replayer::write(const pipeline::Decision& decision, std::string& out) const {
  out += "{\"i\":";
  append_number(out, index_);
  out += ",\"t\":";
  append_number(out, record_.t);
  out += ",\"route\":";
  if (decision.route != nullptr) {
    append_string(out, decision.route->name);
  } else {
    out += "null";
  }
  out += ",\"decision\":\"";
  out += pipeline::name_of(decision.outcome);
  out += "\",\"status\":";
  append_number(out, std::uint64_t{decision.status == 0 ? 200U : decision.status});
  out += ",\"delay\":";
  append_number(out, seconds(decision.hold));
  out += ",\"limiters\":[";
  std::uint64_t remaining = UINT64_MAX;
  bool first = true;
  for (const pipeline::LimiterReport& report : decision.applied()) {
    if (report.limiter->shadow) {
      continue;
    }
    out += first ? "" : ",";
    append_string(out, report.limiter->name);
    remaining = std::min(remaining, report.status.remaining);
    first = false;
  }
  out += "],\"remaining\":";
  if (remaining == UINT64_MAX) {
    out += "null";
  } else {
    append_number(out, remaining);
  }
  out += ",\"retry_after\":";
  append_number(out, pipeline::retry_after_field(decision).value_or(0));
  const auto list = [&](const char* field, bool shadow) {
    bool any = false;
    for (const pipeline::LimiterReport& report : decision.applied()) {
      if (report.limiter->shadow == shadow && !report.verdict.admitted) {
        out += any ? "," : std::string(",\"") + field + "\":[";
        append_string(out, report.limiter->name);
        any = true;
      }
    }
    out += any ? "]" : "";
  };
  if (decision.outcome == pipeline::Outcome::limited) {
    list("violated", false);
  } else {
    list("shadow_limited", true);
  }
  out += "}\n";
}

void Replayer::feed(std::string_view line, std::string& out) {
  ++line_number_;
  if (line.find_first_not_of(" \t") == std::string_view::npos) {
    return;
  }
  const std::optional<std::string> problem = format_ == InputFormat::jsonl
                                                 ? parse_json_line(line, record_)
                                                 : parse_combined_line(line, record_);
  if (problem) {
    summary_.malformed(line_number_, *problem);
    return;
  }
  const std::optional<pipeline::IpAddress> peer = pipeline::IpAddress::parse(record_.ip);
  if (!peer) {
    summary_.malformed(line_number_, "\"" + std::string(record_.ip) + "\" is not an IP address");
    return;
  }
  TimePoint now{Duration(std::llround(record_.t * 1e9))};
  if (now < last_) {
    ++out_of_order_;  // decided at the latest time seen: time does not run backwards
    now = last_;
  }
  last_ = now;
  release_due(now);

  const pipeline::RequestView request{.method = record_.method,
                                      .target = record_.path,
                                      .host = record_.host,
                                      .headers = {record_.headers.data(), record_.header_count},
                                      .peer = *peer};
  const pipeline::Decision decision = pipeline_.decide(request, now, record_.cost);
  hold_permits(decision, now);
  hold_later_charges(decision, now);
  bool shadow_limited = false;
  for (const pipeline::LimiterReport& report : decision.applied()) {
    if (!report.verdict.admitted) {
      if (report.limiter->shadow) {
        shadow_limited = true;
      } else if (decision.outcome == pipeline::Outcome::limited) {
        summary_.limited_key(key_label(report, request, decision));
        break;  // the first refusing limiter is the one that limited
      }
    }
  }
  summary_.record(record_.t, decision,
                  shadow_limited && decision.outcome != pipeline::Outcome::limited);
  write(decision, out);
  ++index_;
}

}  // namespace sluice::replay
