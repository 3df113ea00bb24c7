// docker/grafana/sluice-dashboard.json asks only for what the proxy exports: every metric name in
// every PromQL expression of its panels and variables is declared (`# TYPE`) by a real proxy's
// /metrics, one with the Redis store, a leased limiter, a JWT provider and a limiter charged
// after the response, so that the series shown only with those are there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/redis_server.hpp"
#include "tests/support/reloadable_proxy.hpp"

namespace sluice::test {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

/// Words that read like metric names but are PromQL's own.
const std::set<std::string, std::less<>> kPromqlWords{
    "by",     "without", "on", "ignoring", "group_left", "group_right", "bool",
    "offset", "and",     "or", "unless",   "inf",        "nan",         "atan2"};
/// Those followed by a list of label names, not an expression.
const std::set<std::string, std::less<>> kLabelLists{"by",       "without",    "on",
                                                     "ignoring", "group_left", "group_right"};

bool starts_name(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool in_name(char c) { return starts_name(c) || std::isdigit(static_cast<unsigned char>(c)); }

/// The identifier that starts at `at` (empty if none does).
std::string_view word_at(std::string_view text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && in_name(text[end])) {
    ++end;
  }
  return text.substr(at, end - at);
}

/// Where the bracket opened at `at` closes (quoted strings inside skipped); past the end if never.
std::size_t closing_bracket(std::string_view text, std::size_t at, char open, char close) {
  int depth = 0;
  for (std::size_t i = at; i < text.size(); ++i) {
    if (text[i] == '"' || text[i] == '\'') {
      const char quote = text[i];
      for (++i; i < text.size() && text[i] != quote; ++i) {
        i += text[i] == '\\' ? 1U : 0U;
      }
    } else if (text[i] == open) {
      ++depth;
    } else if (text[i] == close && --depth == 0) {
      return i;
    }
  }
  return text.size();
}

/// The metric names a PromQL expression reads: its identifiers that are not a function called,
/// a PromQL word, a label name (in `{...}` or a `by (...)` list), a string, a number, a range or
/// a Grafana variable (`$__rate_interval`).
std::set<std::string> metrics_in(std::string_view expr) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < expr.size();) {
    const char c = expr[i];
    if (c == '{') {
      i = closing_bracket(expr, i, '{', '}') + 1;
    } else if (c == '[') {
      i = closing_bracket(expr, i, '[', ']') + 1;
    } else if (c == '"' || c == '\'') {
      std::size_t end = i + 1;
      while (end < expr.size() && expr[end] != c) {
        end += expr[end] == '\\' ? 2U : 1U;
      }
      i = end + 1;
    } else if (c == '$') {
      ++i;
      while (i < expr.size() && in_name(expr[i])) {
        ++i;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (i < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.')) {
        ++i;  // 0.99, 1e3, 5m
      }
    } else if (starts_name(c)) {
      const std::size_t start = i;
      while (i < expr.size() && in_name(expr[i])) {
        ++i;
      }
      const std::string name(expr.substr(start, i - start));
      std::size_t next = i;
      while (next < expr.size() && std::isspace(static_cast<unsigned char>(expr[next]))) {
        ++next;
      }
      // A function's arguments, or an aggregation's modifier first: `sum by (route) (...)`.
      const std::string_view following = word_at(expr, next);
      const bool called =
          (next < expr.size() && expr[next] == '(') ||
          (!kLabelLists.contains(name) && (following == "by" || following == "without"));
      if (kLabelLists.contains(name) && called) {
        i = closing_bracket(expr, next, '(', ')') + 1;
      } else if (!called && !kPromqlWords.contains(name)) {
        names.insert(name);
      }
    } else {
      ++i;
    }
  }
  return names;
}

/// Every PromQL expression of a dashboard: its targets' `expr`, and its query variables' queries
/// (Grafana's `label_values(METRIC, LABEL)` read as METRIC).
void expressions_in(const json::value& value, std::vector<std::string>& out) {
  if (const json::object* object = value.if_object()) {
    for (const auto& [key, item] : *object) {
      if (key == "expr" && item.is_string()) {
        out.emplace_back(item.get_string());
      } else if (key == "definition" && item.is_string()) {
        std::string query(item.get_string());
        if (query.starts_with("label_values(")) {
          const std::size_t end = query.find_first_of(",)");
          query = query.substr(13, end - 13);
        }
        out.push_back(query);
      } else {
        expressions_in(item, out);
      }
    }
  } else if (const json::array* array = value.if_array()) {
    for (const json::value& item : *array) {
      expressions_in(item, out);
    }
  }
}

/// What `# TYPE` lines declare: metric name → type.
std::map<std::string, std::string> declared(const std::string& scrape) {
  std::map<std::string, std::string> types;
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# TYPE ")) {
      std::istringstream words(line.substr(7));
      std::string name;
      std::string type;
      words >> name >> type;
      types[name] = type;
    }
  }
  return types;
}

/// The metric names `dashboard` queries that `scrape` does not declare. A `_bucket`, `_sum` or
/// `_count` series counts as its histogram's only when the base name is declared a histogram.
std::vector<std::string> not_exported(const json::value& dashboard, const std::string& scrape,
                                      std::set<std::string>* queried = nullptr) {
  const std::map<std::string, std::string> types = declared(scrape);
  std::vector<std::string> expressions;
  expressions_in(dashboard, expressions);
  std::set<std::string> names;
  for (const std::string& expr : expressions) {
    names.merge(metrics_in(expr));
  }
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    bool found = types.contains(name);
    for (const std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (!found && name.ends_with(suffix)) {
        const auto base = types.find(name.substr(0, name.size() - suffix.size()));
        found = base != types.end() && base->second == "histogram";
      }
    }
    if (!found) {
      missing.push_back(name);
    }
  }
  if (queried != nullptr) {
    *queried = std::move(names);
  }
  return missing;
}

json::value shipped_dashboard() {
  std::ifstream in(SLUICE_SOURCE_DIR "/docker/grafana/sluice-dashboard.json");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return json::parse(text);
}

/// /metrics of a proxy with every optional part whose series the dashboard shows.
std::string full_scrape() {
  const RedisServer redis;
  ReloadableProxy proxy(
      "store: {type: redis, redis: {url: \"" + redis.url() +
      "\", timeout: 1s}}\n"
      "auth: {jwt: {idp: {issuer: \"https://idp.test/\", keys: [{secret: "
      "\"0123456789abcdef0123456789abcdef\", alg: HS256}]}}}\n"
      "limiters:\n"
      "  leased: {algorithm: fixed_window, limit: 1000, window: 1m, key: global, lease: 10}\n"
      "  tokens: {algorithm: token_bucket, rate: 100/m, burst: 100, cost: response}\n"
      "routes:\n"
      "  - {name: chat, match: {path: /chat}, limiters: [tokens], cost_from: {header: used}}\n"
      "  - {name: api, auth: {jwt: idp, required: false}, limiters: [leased]}\n");
  EXPECT_EQ(proxy.send(get("/api")).result_int(), 200);
  return proxy.metrics_once("sluice_requests_total{route=\"api\",decision=\"allowed\"} 1");
}

TEST(GrafanaDashboard, QueriesOnlyMetricsTheProxyExports) {
  const std::string scrape = full_scrape();
  std::set<std::string> queried;
  EXPECT_THAT(not_exported(shipped_dashboard(), scrape, &queried), IsEmpty()) << scrape;
  EXPECT_GE(queried.size(), 20U);  // the panels were read: not an empty pass
  EXPECT_TRUE(queried.contains("sluice_request_duration_seconds_bucket"));
  EXPECT_TRUE(queried.contains("sluice_lease_overshoot_bound"));
  EXPECT_TRUE(queried.contains("sluice_jwt_verifications_total"));
}

TEST(GrafanaDashboard, ANameTheProxyDoesNotExportIsCaught) {
  const std::string scrape = full_scrape();
  json::value dashboard = shipped_dashboard();
  json::object& target = dashboard.as_object()["panels"]
                             .as_array()[1]
                             .as_object()["targets"]
                             .as_array()[0]
                             .as_object();
  target["expr"] =
      "sum(rate(sluice_requests_total{route=\"a\"}[5m])) / "
      "sum(rate(sluice_request_total[5m]))";
  EXPECT_THAT(not_exported(dashboard, scrape), ElementsAre("sluice_request_total"));
}

TEST(GrafanaDashboard, ReadsMetricNamesOutOfPromql) {
  EXPECT_THAT(
      metrics_in("histogram_quantile(0.99, sum by (route, le) (rate(sluice_a_bucket{instance=~"
                 "\"$instance\", le!=\"x\"}[$__rate_interval]))) / on (route) group_left "
                 "sluice_b offset 5m > bool 0.5 and sluice_c{decision=~\"limited|by\"}"),
      ElementsAre("sluice_a_bucket", "sluice_b", "sluice_c"));
  EXPECT_THAT(metrics_in("sum without (kind) (increase(sluice_d[$__range])) * 1e3"),
              ElementsAre("sluice_d"));
}

}  // namespace
}  // namespace sluice::test
