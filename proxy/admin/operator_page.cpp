#include "proxy/admin/operator_page.hpp"

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <string>
#include <utility>
#include <vector>

#include "proxy/admin/config_json.hpp"
#include "proxy/admin/html_escape.hpp"
#include "proxy/admin/metrics_page.hpp"
#include "proxy/admin/page_assets.hpp"
#include "proxy/admin/stats.hpp"

namespace sluice::admin {
namespace {

namespace json = boost::json;

using Row = std::vector<std::string>;

/// A value as a cell shows it: a string as it is, a number, yes or no, a dash for nothing.
std::string cell_text(const json::value* value) {
  if (value == nullptr || value->is_null()) {
    return "-";
  }
  if (value->is_string()) {
    return std::string(value->get_string());
  }
  if (value->is_bool()) {
    return value->get_bool() ? "yes" : "no";
  }
  return json::serialize(*value);
}

std::string cell_text(const json::object& object, std::string_view key) {
  return cell_text(object.if_contains(key));
}

/// A table that scrolls sideways on a narrow screen; `empty` in one row when there are none.
void html_table(std::string& out, const std::vector<std::string_view>& headings,
                const std::vector<Row>& rows, std::string_view empty) {
  out += "<div class=\"scroll\"><table><thead><tr>";
  for (const std::string_view heading : headings) {
    out += "<th>" + html_escaped(heading) + "</th>";
  }
  out += "</tr></thead><tbody>";
  for (const Row& row : rows) {
    out += "<tr>";
    for (const std::string& text : row) {
      out += "<td>" + html_escaped(text) + "</td>";
    }
    out += "</tr>";
  }
  if (rows.empty()) {
    out += "<tr><td colspan=\"" + std::to_string(headings.size()) + "\" class=\"none\">" +
           html_escaped(empty) + "</td></tr>";
  }
  out += "</tbody></table></div>";
}

void open_section(std::string& out, std::string_view id, std::string_view title) {
  out += "<section id=\"";
  out += id;
  out += "\"><h2>" + html_escaped(title) + "</h2><div class=\"body\">";
}

void close_section(std::string& out) { out += "</div></section>\n"; }

void traffic_section(std::string& out, const json::object& stats) {
  std::vector<std::string_view> headings{"route", "req/s (10 s)"};
  headings.insert(headings.end(), telemetry::kMetricDecisionNames.begin(),
                  telemetry::kMetricDecisionNames.end());
  // The last ten seconds of each route's history, as the script's table shows them.
  const json::object& history = stats.at("history").as_object();
  const auto recent = [&history](std::string_view route) {
    std::uint64_t sum = 0;
    for (const json::value& series : history.at("routes").as_array()) {
      if (series.at("route").as_string() != route) {
        continue;
      }
      for (const auto& [decision, rates] : series.at("per_second").as_object()) {
        const json::array& seconds = rates.as_array();
        for (std::size_t i = seconds.size() > 10 ? seconds.size() - 10 : 0; i < seconds.size();
             ++i) {
          sum += seconds[i].to_number<std::uint64_t>();
        }
      }
    }
    return fmt::format("{:.1f}", static_cast<double>(sum) / 10.0);
  };
  std::vector<Row> rows;
  for (const json::value& route : stats.at("routes").as_array()) {
    const std::string name = cell_text(route.as_object(), "route");
    Row row{name.empty() ? "(no route)" : name, recent(name)};
    const json::object& total = route.at("total").as_object();
    for (const std::string_view decision : telemetry::kMetricDecisionNames) {
      row.push_back(cell_text(total, decision));
    }
    rows.push_back(std::move(row));
  }
  open_section(out, "traffic", "Requests by route and decision");
  out += "<div id=\"charts\" class=\"charts\"></div>";
  html_table(out, headings, rows, "no route has had a request yet");
  close_section(out);
}

void limiter_sections(std::string& out, const json::object& stats) {
  std::vector<Row> rows;
  for (const json::value& limiter : stats.at("limiters").as_array()) {
    const json::object& shown = limiter.as_object();
    rows.push_back({cell_text(shown, "limiter"), cell_text(shown, "algorithm"),
                    cell_text(shown, "keys"), cell_text(shown, "lease"),
                    cell_text(shown, "overshoot_bound")});
  }
  open_section(out, "limiters", "Limiters");
  html_table(out, {"limiter", "algorithm", "keys", "lease", "overshoot bound"}, rows, "no limiter");
  close_section(out);
  open_section(out, "top", "Top keys, last minute");
  out +=
      "<p class=\"note\">The page's script lists each limiter's heaviest keys here (from "
      "<a href=\"/top\">/top</a>), with a reset and an override for each.</p>";
  close_section(out);
}

void store_section(std::string& out, const json::object& stats) {
  std::vector<Row> rows;
  for (const auto& [name, value] : stats.at("store").as_object()) {
    if (!value.is_array()) {
      rows.push_back({std::string(name), cell_text(&value)});
    }
  }
  if (const json::value* nodes = stats.at("store").as_object().if_contains("nodes")) {
    for (const json::value& node : nodes->as_array()) {
      const json::object& shown = node.as_object();
      rows.push_back({"node " + cell_text(shown, "address"),
                      "breaker " + cell_text(shown, "breaker") +
                          (shown.at("serving").as_bool() ? "" : ", no loop sends to it")});
    }
  }
  for (const json::value& provider : stats.at("jwks").as_array()) {
    const json::object& fetches = provider.as_object();
    rows.push_back(
        {"JWKS " + cell_text(fetches, "provider"),
         cell_text(fetches, "ok") + " fetched, " + cell_text(fetches, "failed") + " failed"});
  }
  open_section(out, "store", "Store");
  html_table(out, {"", "value"}, rows, "");
  close_section(out);
}

void upstream_section(std::string& out, const json::object& stats) {
  std::vector<Row> rows;
  for (const json::value& upstream : stats.at("upstream_errors").as_array()) {
    const json::object& errors = upstream.as_object();
    rows.push_back({cell_text(errors, "upstream"), cell_text(errors, "connect"),
                    cell_text(errors, "timeout"), cell_text(errors, "broken")});
  }
  open_section(out, "upstreams", "Upstream errors");
  html_table(out, {"upstream", "connect", "timeout", "broken"}, rows, "no upstream used yet");
  close_section(out);
}

void protocol_section(std::string& out, const json::object& stats) {
  const json::object& tls = stats.at("tls_handshakes").as_object();
  const json::object& http2 = stats.at("http2").as_object();
  const json::object& connections = stats.at("connections").as_object();
  const std::vector<Row> rows{{"open connections", cell_text(connections, "open")},
                              {"parked connections", cell_text(connections, "parked")},
                              {"TLS handshakes: full", cell_text(tls, "full")},
                              {"TLS handshakes: resumed", cell_text(tls, "resumed")},
                              {"TLS handshakes: failed", cell_text(tls, "failed")},
                              {"HTTP/2 connections", cell_text(http2, "connections")},
                              {"HTTP/2 GOAWAYs", cell_text(http2, "goaways")},
                              {"access log lines dropped", cell_text(stats, "access_log_dropped")}};
  open_section(out, "protocols", "Connections and protocols");
  html_table(out, {"", "count"}, rows, "");
  close_section(out);
}

void reload_section(std::string& out, const json::object& stats, const std::string& config) {
  const json::object& reloads = stats.at("reloads").as_object();
  std::vector<Row> rows{{"reloads", cell_text(reloads, "succeeded") + " succeeded, " +
                                        cell_text(reloads, "failed") + " failed"}};
  std::vector<std::string> errors;
  if (const json::value& last = stats.at("last_reload"); last.is_object()) {
    const json::object& report = last.as_object();
    rows.push_back({"last reload", std::string(report.at("ok").as_bool() ? "success" : "failure") +
                                       ", " + cell_text(report, "trigger") + ", " +
                                       cell_text(report, "at")});
    for (const json::value& error : report.at("errors").as_array()) {
      errors.push_back(cell_text(&error));
    }
    for (const json::value& field : report.at("restart_needed").as_array()) {
      rows.push_back({"needs a restart", cell_text(&field)});
    }
  } else {
    rows.push_back({"last reload", "none since the start"});
  }
  open_section(out, "reload", "Configuration");
  out += "<div id=\"reload-controls\"></div>";
  html_table(out, {"", ""}, rows, "");
  out += "<ul id=\"reload-errors\" class=\"errors\">";
  for (const std::string& error : errors) {
    out += "<li>" + html_escaped(error) + "</li>";
  }
  out += "</ul><details><summary>Effective configuration (/config)</summary><pre id=\"config\">" +
         html_escaped(config) + "</pre></details>";
  close_section(out);
}

/// The headers of the page and its files: their own policy, never sniffed, never cached stale.
AdminResponse with_page_headers(AdminResponse response) {
  response.set("Content-Security-Policy", kPagePolicy);
  response.set("X-Content-Type-Options", "nosniff");
  response.set("Referrer-Policy", "no-referrer");
  response.set(http::field::cache_control, "no-cache");
  return response;
}

}  // namespace

AdminResponse operator_page(const AdminRequest& request, const live::Generation& generation,
                            const http::LoopContext& context) {
  const json::object data = stats(generation, context, 0);
  std::string sections;
  traffic_section(sections, data);
  limiter_sections(sections, data);
  store_section(sections, data);
  upstream_section(sections, data);
  protocol_section(sections, data);
  reload_section(sections, data,
                 config_json(*generation.config, lease_holders_of(*context.proxy.store)));
  const std::string_view frame = page_html();
  constexpr std::string_view kMark = "<!--sluice:sections-->";
  const std::size_t at = frame.find(kMark);
  std::string page;
  page.reserve(frame.size() + sections.size());
  page.append(frame.substr(0, at)).append(sections).append(frame.substr(at + kMark.size()));
  return with_page_headers(
      text_response(request, http::status::ok, std::move(page), "text/html; charset=utf-8"));
}

AdminResponse page_file(const AdminRequest& request, std::string_view path) {
  if (path == "/page.css") {
    return with_page_headers(text_response(request, http::status::ok, std::string(page_css()),
                                           "text/css; charset=utf-8"));
  }
  if (path == "/page.js") {
    return with_page_headers(text_response(request, http::status::ok, std::string(page_js()),
                                           "text/javascript; charset=utf-8"));
  }
  return problem(request, http::status::not_found);
}

}  // namespace sluice::admin
