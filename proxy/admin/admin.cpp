#include "proxy/admin/admin.hpp"

#include <boost/beast/core.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <string>

#include "proxy/admin/config_json.hpp"
#include "proxy/http/beast_http.hpp"
#include "proxy/http/responses.hpp"
#include "proxy/pipeline/request_key.hpp"
#include "proxy/pipeline/wait_seconds.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;

/// `%41` → `A`; `+` is kept (a composite key's separator).
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const auto hex = [](char c) -> int {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
      };
      const int high = hex(text[i + 1]);
      const int low = hex(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

http::response<http::string_body> text_response(http::status status, unsigned version,
                                                bool keep_alive, std::string body,
                                                std::string_view type = "text/plain") {
  http::response<http::string_body> response{status, version};
  response.set(http::field::content_type, type);
  response.body() = std::move(body);
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

/// `body` as JSON text on one line.
http::response<http::string_body> json_response(http::status status, unsigned version,
                                                bool keep_alive, const json::object& body) {
  return text_response(status, version, keep_alive, json::serialize(body) + "\n",
                       "application/json");
}

http::response<http::string_body> problem(http::status status, unsigned version, bool keep_alive) {
  http::ResponseText body;
  http::write_problem(body, status);
  return text_response(status, version, keep_alive, fmt::to_string(body),
                       "application/problem+json");
}

http::response<http::string_body> limiter_state(std::string_view rest, pipeline::Pipeline& pipeline,
                                                const http::LoopContext& context, unsigned version,
                                                bool keep_alive) {
  // ?tier=VALUE: a tiered limiter's key as that tier counts it (SPEC §8).
  std::optional<std::string> tier;
  if (const std::size_t query = rest.find('?'); query != std::string_view::npos) {
    if (const std::optional<std::string_view> value =
            pipeline::query_value(rest.substr(query + 1), "tier")) {
      tier = percent_decoded(*value);
    }
    rest = rest.substr(0, query);
  }
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return problem(http::status::not_found, version, keep_alive);
  }
  const std::string name = percent_decoded(rest.substr(0, slash));
  const std::string key = percent_decoded(rest.substr(slash + 1));
  const limiter::TimePoint now = context.proxy.clock.now();
  const std::optional<limiter::Status> status = pipeline.peek(name, key, now, tier);
  if (!status) {
    return problem(http::status::not_found, version, keep_alive);
  }
  std::optional<limiter::Duration> banned;
  if (const std::optional<pipeline::IpAddress> client = pipeline::IpAddress::parse(key)) {
    banned = pipeline.banned_for(*client, now);
  }
  json::object state{{"limiter", name},
                     {"remaining", status->remaining},
                     {"reset", pipeline::seconds_rounded_up(status->reset)},
                     {"banned", banned.has_value()}};
  if (banned) {
    state["banned_for"] = pipeline::retry_after_seconds(*banned);
  }
  if (tier) {
    state["tier"] = *tier;
  }
  return json_response(http::status::ok, version, keep_alive, state);
}

/// The event loops of all replicas holding leases on `store`, as it counts them: at least one.
std::uint64_t lease_holders_of(const store::Store& store) {
  const auto health = store.health();
  return std::max<std::uint64_t>(health ? health->lease_holders : 0, 1);
}

http::response<http::string_body> metrics_page(const live::Generation& generation,
                                               const http::LoopContext& context, unsigned version,
                                               bool keep_alive) {
  const auto keys = generation.pipeline.limiter_keys();
  telemetry::Metrics::Gauges gauges{.limiter_keys = keys,
                                    .open_connections = context.proxy.connections.load(),
                                    .parked_connections = context.proxy.parked.load(),
                                    .access_log_dropped = context.proxy.access_log.dropped()};
  if (const auto health = context.proxy.store->health()) {
    gauges.store = health->name;
    gauges.store_errors = health->errors;
    gauges.store_available = health->available;
    gauges.store_cached_refusals = health->cached_refusals;
    gauges.store_calls = health->calls;
    gauges.store_requests_in_calls = health->requests_in_calls;
    gauges.store_refunds = health->refunds;
    gauges.store_lost_settlements = health->lost_settlements;
    gauges.store_lease_hits = health->lease_hits;
    gauges.store_lease_holders = health->lease_holders;
  }
  std::vector<std::pair<std::string_view, std::uint64_t>> lease_bounds;
  if (gauges.store != "memory") {
    for (const config::LimiterConfig& limiter : generation.config->limiters) {
      if (limiter.lease != 0) {
        lease_bounds.emplace_back(
            limiter.name, limiter.lease * std::max<std::uint64_t>(gauges.store_lease_holders, 1));
      }
    }
  }
  gauges.lease_bounds = lease_bounds;
  return text_response(http::status::ok, version, keep_alive, context.proxy.metrics.render(gauges),
                       "text/plain; version=0.0.4; charset=utf-8");
}

/// POST /reload: 200 and what was kept, or 422 with every error (the old config stays).
http::response<http::string_body> reload(const http::LoopContext& context, unsigned version,
                                         bool keep_alive) {
  if (!context.proxy.reloader) {
    return problem(http::status::not_found, version, keep_alive);
  }
  const live::ReloadReport report = context.proxy.reloader->reload();
  const auto texts = [](const std::vector<std::string>& items) {
    return json::array(items.begin(), items.end());
  };
  const json::object answer =
      report.ok ? json::object{{"result", "success"},
                               {"kept_state", report.kept_state},
                               {"restart_needed", texts(report.restart_needed)}}
                : json::object{{"result", "failure"}, {"errors", texts(report.errors)}};
  log_reload(report, "POST /reload");
  return json_response(report.ok ? http::status::ok : http::status::unprocessable_entity, version,
                       keep_alive, answer);
}

}  // namespace

io::Awaitable<void> serve_admin(io::Socket socket, http::LoopContext& context) {
  beast::basic_stream<tcp, io::Executor> stream(std::move(socket));
  beast::flat_buffer buffer(http::kMaxHeaderBytes);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(http::kMaxHeaderBytes);
    parser.body_limit(64 * 1024);
    stream.expires_after(context.generations.get()->config->timeouts.idle);
    auto [ec, read] = co_await http::async_read(stream, buffer, parser, io::use_nothrow);
    if (ec) {
      break;
    }
    const auto& request = parser.get();
    const bool keep_alive = request.keep_alive();
    const std::string_view target = request.target().substr(0, request.target().find('?'));
    const bool get = request.method() == http::verb::get || request.method() == http::verb::head;
    const std::shared_ptr<const live::Generation> generation = context.generations.get();
    http::response<http::string_body> response;
    if (target == "/reload") {
      response = request.method() == http::verb::post
                     ? reload(context, request.version(), keep_alive)
                     : problem(http::status::method_not_allowed, request.version(), keep_alive);
    } else if (target == "/healthz" || target == "/readyz" || target == "/metrics" ||
               target == "/config" || target.starts_with("/limiters/")) {
      if (!get) {
        response = problem(http::status::method_not_allowed, request.version(), keep_alive);
      } else if (target == "/healthz") {
        response = text_response(http::status::ok, request.version(), keep_alive, "ok\n");
      } else if (target == "/metrics") {
        response = metrics_page(*generation, context, request.version(), keep_alive);
      } else if (target == "/config") {
        response =
            text_response(http::status::ok, request.version(), keep_alive,
                          config_json(*generation->config, lease_holders_of(*context.proxy.store)),
                          "application/json");
      } else if (target == "/readyz") {
        // Ready while accepting traffic and the store answers (SPEC §5). A failed store is
        // asked again here: an unready replica may get no request that would find it back.
        const bool draining = context.proxy.draining.load(std::memory_order_relaxed);
        const auto available = [&context] {
          const auto health = context.proxy.store->health();
          return !health || health->available;
        };
        if (!available()) {
          co_await context.proxy.store->probe(context.index);
        }
        const bool store_down = !available();
        const std::string_view why = draining     ? "draining\n"
                                     : store_down ? "store unavailable\n"
                                                  : "ready\n";
        response = text_response(
            draining || store_down ? http::status::service_unavailable : http::status::ok,
            request.version(), keep_alive, std::string(why));
      } else {
        // With its query: ?tier= (see limiter_state).
        const std::string_view whole(request.target().data(), request.target().size());
        response = limiter_state(whole.substr(std::string_view("/limiters/").size()),
                                 generation->pipeline, context, request.version(), keep_alive);
      }
    } else {
      response = problem(http::status::not_found, request.version(), keep_alive);
    }
    auto [write_error, written] = co_await http::async_write(stream, response, io::use_nothrow);
    if (write_error || !keep_alive) {
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(io::Socket::shutdown_send, ignored);
}

}  // namespace sluice::admin
