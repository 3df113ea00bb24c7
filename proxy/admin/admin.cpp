#include "proxy/admin/admin.hpp"

#include <spdlog/spdlog.h>

#include <boost/beast/core.hpp>
#include <boost/json/array.hpp>
#include <sstream>
#include <string>

#include "proxy/admin/admin_auth.hpp"
#include "proxy/admin/admin_response.hpp"
#include "proxy/admin/config_json.hpp"
#include "proxy/admin/limiter_state.hpp"
#include "proxy/admin/metrics_page.hpp"
#include "proxy/admin/operator_page.hpp"
#include "proxy/admin/runtime_control.hpp"
#include "proxy/admin/stats.hpp"
#include "proxy/admin/top_keys_endpoint.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;

/// POST /reload: 200 and what was kept, or 422 with every error (the old config stays).
AdminResponse reload(const AdminRequest& request, const http::LoopContext& context) {
  if (!context.proxy.reloader) {
    return problem(request, http::status::not_found);
  }
  const live::ReloadReport report = context.proxy.reloader->reload("POST /reload");
  const auto texts = [](const std::vector<std::string>& items) {
    return json::array(items.begin(), items.end());
  };
  const json::object answer =
      report.ok ? json::object{{"result", "success"},
                               {"kept_state", report.kept_state},
                               {"restart_needed", texts(report.restart_needed)}}
                : json::object{{"result", "failure"}, {"errors", texts(report.errors)}};
  return json_response(request, report.ok ? http::status::ok : http::status::unprocessable_entity,
                       answer);
}

/// GET /readyz: ready while accepting traffic and the store answers (SPEC §5). A failed store
/// is asked again here: an unready replica may get no request that would find it back.
io::Awaitable<AdminResponse> readiness(const AdminRequest& request, http::LoopContext& context) {
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
  co_return text_response(
      request, draining || store_down ? http::status::service_unavailable : http::status::ok,
      std::string(why));
}

/// A write (SPEC §10): refused without the token (or, without one, off a loopback address),
/// else done; counted by action and result either way.
io::Awaitable<AdminResponse> write(const AdminRequest& request, http::LoopContext& context,
                                   telemetry::AdminAction action) {
  using telemetry::AdminResult;
  std::optional<AdminResponse> response = refuse_write(request, *context.generations.get()->config);
  if (response) {
    spdlog::warn("admin: {} {} refused (from {}): {}",
                 std::string_view(request.message.method_string()), request.path, request.peer,
                 static_cast<unsigned>(response->result()));
  } else if (action == telemetry::AdminAction::reload) {
    response = reload(request, context);
  } else {
    response = co_await runtime_write(request, context, action);
  }
  const unsigned status = response->result_int();
  const AdminResult result = status < 300                     ? AdminResult::ok
                             : status == 401 || status == 403 ? AdminResult::refused
                             : status == 503                  ? AdminResult::failed
                                                              : AdminResult::invalid;
  context.proxy.metrics.count_admin_write(action, result);
  co_return std::move(*response);
}

/// The answer to one request: the endpoint its path names, 405 for a method it does not take,
/// else 404.
io::Awaitable<AdminResponse> respond(const AdminRequest& request, http::LoopContext& context) {
  const http::verb method = request.message.method();
  const bool get = method == http::verb::get || method == http::verb::head;
  const std::string_view path = request.path;
  const std::shared_ptr<const live::Generation> generation = context.generations.get();
  if (path == "/reload") {
    // Not a ?: around a co_await: GCC's coroutines free its result twice.
    if (method != http::verb::post) {
      co_return problem(request, http::status::method_not_allowed);
    }
    co_return co_await write(request, context, telemetry::AdminAction::reload);
  }
  if (const std::optional<telemetry::AdminAction> action = runtime_action(request)) {
    co_return co_await write(request, context, *action);
  }
  const bool page = path == "/" || path == "/page.css" || path == "/page.js";
  const bool known = page || path == "/stats" || path == "/healthz" || path == "/readyz" ||
                     path == "/metrics" || path == "/config" || path == "/overrides" ||
                     path == "/bans" || path == "/top" || path.starts_with("/limiters/") ||
                     path.starts_with("/overrides/") || path.starts_with("/bans/");
  if (!known) {
    co_return problem(request, http::status::not_found);
  }
  if (!get) {
    co_return problem(request, http::status::method_not_allowed);
  }
  if (path == "/") {
    co_return operator_page(request, *generation, context);
  }
  if (page) {
    co_return page_file(request, path);
  }
  if (path == "/stats") {
    co_return stats_page(request, *generation, context);
  }
  if (path == "/healthz") {
    co_return text_response(request, http::status::ok, "ok\n");
  }
  if (path == "/readyz") {
    co_return co_await readiness(request, context);
  }
  if (path == "/metrics") {
    co_return metrics_page(request, *generation, context);
  }
  if (path == "/config") {
    co_return text_response(
        request, http::status::ok,
        config_json(*generation->config, lease_holders_of(*context.proxy.store)),
        "application/json");
  }
  if (path == "/top") {
    co_return top_keys(request, *generation, context);
  }
  if (path == "/overrides") {
    co_return co_await overrides_list(request, context);
  }
  if (path == "/bans") {
    co_return co_await bans_list(request, context);
  }
  if (!path.starts_with("/limiters/")) {
    co_return problem(request, http::status::method_not_allowed);
  }
  co_return limiter_state(request, *generation, context);
}

/// The client's address, as the log of writes names it.
std::string peer_of(const io::Socket& socket) {
  beast::error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  if (error) {
    return "?";
  }
  std::ostringstream text;
  text << endpoint;
  return text.str();
}

}  // namespace

io::Awaitable<void> serve_admin(io::Socket socket, http::LoopContext& context) {
  const std::string peer = peer_of(socket);
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
    const auto& message = parser.get();
    const std::string_view target(message.target().data(), message.target().size());
    const std::size_t question = target.find('?');
    const AdminRequest request{.message = message,
                               .path = target.substr(0, question),
                               .query = question == std::string_view::npos
                                            ? std::string_view{}
                                            : target.substr(question + 1),
                               .version = message.version(),
                               .keep_alive = message.keep_alive(),
                               .peer = peer};
    AdminResponse response = co_await respond(request, context);
    auto [write_error, written] = co_await http::async_write(stream, response, io::use_nothrow);
    if (write_error || !request.keep_alive) {
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(io::Socket::shutdown_send, ignored);
}

}  // namespace sluice::admin
