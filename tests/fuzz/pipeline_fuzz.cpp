// A request head, as a client (or a proxy in front of us) sends it, through the request pipeline
// of a fixed configuration (fuzz_config.hpp): client address through trusted proxies and
// Forwarded / X-Forwarded-For, deny networks, bans, routing, keys from headers, cookies, query
// parameters and bearer tokens, overrides, limiters. The input, one part per line:
//
//   198.51.100.7                  the peer address (anything else: 10.0.0.1, a trusted proxy)
//   GET /api/x?tenant=a           the method, then the target
//   X-Forwarded-For: 192.0.2.1    headers, NAME: VALUE (Host among them)
//
// Nothing is filtered: `sluice replay` hands the pipeline any bytes a log holds. Besides the
// sanitizers, it checks what must hold for any request: a peer that is not a trusted proxy is
// the client whatever the headers say, a client in a denied network is denied, decisions are
// consistent, and addresses read back as they print.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/pipeline/ip_address.hpp"
#include "proxy/pipeline/pipeline.hpp"
#include "proxy/pipeline/request_key.hpp"
#include "proxy/pipeline/request_view.hpp"
#include "tests/fuzz/fuzz_config.hpp"

namespace {

// Project symbols (one place to re-qualify them).
using sluice::config::Cidr;
using sluice::config::ProxyConfig;
using sluice::fuzz::fuzz_config;
using sluice::limiter::Duration;
using sluice::limiter::TimePoint;
using sluice::pipeline::build_key;
using sluice::pipeline::ChargeResult;
using sluice::pipeline::Charges;
using sluice::pipeline::Decision;
using sluice::pipeline::Header;
using sluice::pipeline::IpAddress;
using sluice::pipeline::Outcome;
using sluice::pipeline::Pipeline;
using sluice::pipeline::RequestView;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "pipeline_fuzz: %s\n", what);
    std::abort();
  }
}

/// The next line of `text` (without its '\n'), or nullopt at the end.
std::optional<std::string_view> next_line(std::string_view& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  const std::size_t end = std::min(text.find('\n'), text.size());
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(std::min(end + 1, text.size()));
  return line;
}

/// An address that prints and reads back as itself.
void check_round_trip(const IpAddress& address) {
  const std::optional<IpAddress> again = IpAddress::parse(address.to_string());
  require(again && *again == address, "an address does not read back as it prints");
}

bool in_any(const IpAddress& address, const std::vector<Cidr>& networks) {
  return std::any_of(networks.begin(), networks.end(),
                     [&](const Cidr& network) { return address.in(network); });
}

void check_decision(const Decision& decision, const RequestView& request,
                    const ProxyConfig& config) {
  check_round_trip(decision.client);
  if (!in_any(request.peer, config.trusted_proxies)) {
    require(decision.client == request.peer, "an untrusted peer's headers changed the client");
  }
  if (in_any(decision.client, config.deny)) {
    require(decision.outcome == Outcome::denied, "a client in a denied network was not denied");
  }
  require(decision.report_count <= decision.reports.size(), "too many reports");
  require(decision.permit_count <= decision.report_count, "a permit without its report");
  switch (decision.outcome) {
    case Outcome::allowed:
    case Outcome::delayed:
    case Outcome::limited:
      require(decision.route != nullptr, "a limiter decision without a route");
      break;
    case Outcome::denied:
      require(decision.status == 403 || decision.status == 503, "denied without 403 or 503");
      break;
    case Outcome::no_route:
      require(decision.route == nullptr && decision.status == 404, "no route without 404");
      break;
    case Outcome::unauthorized:
      require(decision.route != nullptr && decision.route->auth && decision.status == 401,
              "401 on a route that verifies no token");
      break;
  }
  require(decision.outcome == Outcome::delayed || decision.hold == Duration::zero(),
          "a hold on a request that is not delayed");
  // The key of every limiter that applied, as `sluice replay` labels it.
  std::string key;
  for (const auto& report : decision.applied()) {
    require(report.limiter != nullptr, "a report without its limiter");
    require(build_key(report.limiter->key, report.limiter->ipv6_prefix, request, decision.client,
                      decision.route->name, decision.auth.identity.get(), key),
            "a limiter applied whose key cannot be formed");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ProxyConfig& config = fuzz_config();
  std::string_view text(reinterpret_cast<const char*>(data), size);

  IpAddress peer = *IpAddress::parse("10.0.0.1");
  if (const auto line = next_line(text)) {
    if (const std::optional<IpAddress> address = IpAddress::parse(*line)) {
      check_round_trip(*address);
      peer = *address;
    }
  }
  RequestView request{.method = "GET", .target = "/", .host = {}, .headers = {}, .peer = peer};
  if (const auto line = next_line(text)) {
    const std::size_t space = std::min(line->find(' '), line->size());
    request.method = line->substr(0, space);
    request.target = line->substr(std::min(space + 1, line->size()));
  }
  std::vector<Header> headers;
  while (const auto line = next_line(text)) {
    const std::size_t colon = std::min(line->find(':'), line->size());
    std::string_view value = line->substr(std::min(colon + 1, line->size()));
    value.remove_prefix(std::min(value.find_first_not_of(" \t"), value.size()));
    headers.push_back({line->substr(0, colon), value});
  }
  request.headers = headers;
  request.host = request.header("Host");  // the first one, as the session takes it

  // As the proxy decides: prepare, the memory store's charge, conclude; the permits go back once
  // the next request has been decided (a response still in flight), then the ban's strikes.
  Pipeline pipeline(config);
  using std::chrono::seconds;
  const std::array<TimePoint, 5> times{TimePoint(seconds(0)), TimePoint(seconds(0)),
                                       TimePoint(seconds(0)), TimePoint(seconds(1)),
                                       TimePoint(seconds(120))};
  std::optional<Decision> in_flight;
  for (const TimePoint now : times) {
    Decision decision;
    Charges charges;
    if (pipeline.prepare(request, now, std::nullopt, decision, charges)) {
      const ChargeResult charged = Pipeline::charge_locally(charges, now);
      pipeline.conclude(decision, charges, charged, now);
    }
    check_decision(decision, request, config);
    if (in_flight) {
      Pipeline::release_locally(*in_flight);
    }
    in_flight = decision;
  }
  Pipeline::release_locally(*in_flight);
  // With a cost, as a replayed line may give one.
  check_decision(pipeline.decide(request, times.back(), 2), request, config);
  return 0;
}
