#include "proxy/cli/check_command.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "config/units.hpp"
#include "config/url.hpp"
#include "limiter/validate.hpp"

namespace sluice::cli {
namespace {

using config::LimiterConfig;
using config::Route;
using limiter::AlgorithmKind;

using Row = std::vector<std::string>;

void print_table(const std::vector<Row>& rows, std::ostream& out) {
  std::vector<std::size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(widths[i] - row[i].size() + 2, ' ');
      }
    }
    out << line << '\n';
  }
}

std::string parameters(const limiter::LimiterOptions& options) {
  using limiter::format_duration;
  using limiter::format_number;
  switch (options.algorithm) {
    case AlgorithmKind::fixed_window:
      if (options.calendar != limiter::Calendar::none) {
        return "limit " + std::to_string(options.limit) + " per " +
               std::string(limiter::name_of(options.calendar)) +
               (options.time_zone != nullptr ? " (" + std::string(options.time_zone->name()) + ")"
                                             : std::string(" (UTC)"));
      }
      [[fallthrough]];
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
      return "limit " + std::to_string(options.limit) + " per " + format_duration(options.window);
    case AlgorithmKind::wheel:
      return "limit " + std::to_string(options.limit) + " per " + format_duration(options.window) +
             ", " + std::to_string(options.slots) + " slots";
    case AlgorithmKind::token_bucket:
      if (options.warmup > limiter::Duration::zero()) {
        return "rate " + config::format_rate(options.rate) + ", warmup " +
               format_duration(options.warmup) + ", cold factor " +
               format_number(options.cold_factor);
      }
      return "rate " + config::format_rate(options.rate) + ", burst " +
             format_number(options.burst.value_or(std::max(1.0, options.rate.per_second())));
    case AlgorithmKind::leaky_bucket:
      return "rate " + config::format_rate(options.rate) + ", burst " +
             format_number(options.burst.value_or(0));
    case AlgorithmKind::concurrency:
      return "limit " + std::to_string(options.limit) + " in flight";
  }
  return "";
}

std::string behaviour(const LimiterConfig& limiter) {
  std::string text =
      limiter.options.policy.mode == limiter::Mode::delay
          ? "delay up to " + limiter::format_duration(limiter.options.policy.max_delay)
          : "reject";
  if (limiter.status != 429) {
    text += " with " + std::to_string(limiter.status);
  }
  if (limiter.shadow) {
    text += ", shadow";
  }
  if (!limiter.overrides.empty()) {
    text += ", " + std::to_string(limiter.overrides.size()) + " override" +
            (limiter.overrides.size() == 1 ? "" : "s");
  }
  if (limiter.cost_from_response) {
    text += ", charged what the response cost";
  }
  if (!limiter.count_if_status.empty()) {
    text += ", counts only";
    for (const unsigned status : limiter.count_if_status) {
      text += " " + std::to_string(status);
    }
  }
  return text;
}

/// A route's cost: its own, and where its responses' cost is read (`cost_from`).
std::string cost_text(const config::Route& route) {
  std::string text = std::to_string(route.cost);
  if (!route.cost_from) {
    return text;
  }
  using Source = config::CostFrom::Source;
  const config::CostFrom& from = *route.cost_from;
  switch (from.source) {
    case Source::usage:
      text += from.usage == config::CostFrom::Usage::openai ? ", openai " : ", anthropic ";
      text += from.count == config::CostFrom::Count::total   ? "total"
              : from.count == config::CostFrom::Count::input ? "input"
                                                             : "output";
      text += " tokens";
      break;
    case Source::header:
      text += ", header " + from.field;
      break;
    case Source::json:
      text += ", json " + from.field;
      break;
    case Source::bytes:
      text += ", response bytes";
      break;
  }
  if (from.estimate != 0) {
    text += " (estimate " + std::to_string(from.estimate) + ")";
  }
  return text;
}

std::string match_text(const config::RouteMatch& match) {
  using Path = config::RouteMatch::Path;
  std::string text;
  for (const std::string& method : match.methods) {
    text += (text.empty() ? "" : "|") + method;
  }
  if (!text.empty()) {
    text += ' ';
  }
  switch (match.path_kind) {
    case Path::any:
      text += "*";
      break;
    case Path::exact:
      text += match.path;
      break;
    case Path::prefix:
      text += match.path + "*";
      break;
    case Path::regex:
      text += "~" + match.path;
      break;
  }
  if (match.host) {
    text += " host " + *match.host;
  }
  for (const config::HeaderCondition& header : match.headers) {
    text += " [" + (header.present ? header.name : "no " + header.name) +
            (header.value ? "=" + *header.value : "") + "]";
  }
  return text;
}

std::string target(const Route& route, const config::ProxyConfig& config) {
  if (route.respond) {
    return "respond " + std::to_string(route.respond->status);
  }
  if (!route.upstream && !config.upstream) {
    return "decide only";  // the proxy's listeners answer it 502
  }
  return config::redact_url(route.upstream ? route.upstream->url : config.upstream->url);
}

/// "plan=free", "tenant, user": what a descriptor rule asks for.
std::string entries_text(const config::RlsRule& rule) {
  std::string text;
  for (const config::RlsEntry& entry : rule.entries) {
    text += (text.empty() ? "" : ", ") + entry.key + (entry.value ? "=" + *entry.value : "");
  }
  return text;
}

/// What the decision service's port serves (SPEC §11): forward auth for the routes, and Envoy's
/// rate-limit service for the `rls` domains.
void print_decide(const config::ProxyConfig& config, std::ostream& out) {
  const config::Listener& decide = *config.decide;
  out << "\ndecide " << decide.address.host << ':' << decide.address.port
      << (decide.tls ? " (TLS)" : "")
      << ": forward auth decides the routes above (no route: 200); Envoy's rate-limit "
         "service "
      << (config.rls.empty() ? "has no domains" : "serves:") << "\n";
  if (config.rls.empty()) {
    return;
  }
  out << '\n';
  std::vector<Row> rules{{"DOMAIN", "DESCRIPTOR", "LIMITER", "FROM"}};
  for (const config::RlsDomain& domain : config.rls) {
    for (const config::RlsRule& rule : domain.rules) {
      rules.push_back({domain.domain, entries_text(rule),
                       rule.limiter.empty() ? "unlimited" : rule.limiter,
                       domain.file.empty() ? "-" : domain.file});
    }
  }
  print_table(rules, out);
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text.empty() ? "-" : text;
}

}  // namespace

void print_config_summary(const config::ProxyConfig& config, std::ostream& out) {
  out << config.file << ": OK\n\n";
  out << "listen";
  for (const config::Listener& listener : config.listeners) {
    out << (&listener == &config.listeners.front() ? " " : " and ") << listener.address.host << ':'
        << listener.address.port << (listener.tls ? " (TLS)" : "");
  }
  if (config.admin) {
    out << ", admin " << config.admin->host << ':' << config.admin->port;
  }
  if (config.upstream) {
    out << ", upstream " << config::redact_url(config.upstream->url);
  }
  out << ", store "
      << (config.store.type == config::StoreType::memory
              ? "memory"
              : config::redact_url(config.store.redis.url))
      << " (at most " << config.store.max_keys << " keys per limiter)"
      << (config.watch ? ", watching its files" : "") << "\n\n";

  std::vector<Row> limiters{{"LIMITER", "ALGORITHM", "PARAMETERS", "KEY", "BEHAVIOUR"}};
  for (const LimiterConfig& limiter : config.limiters) {
    limiters.push_back({limiter.name, std::string(limiter::name_of(limiter.options.algorithm)),
                        parameters(limiter.options), limiter.key.text, behaviour(limiter)});
  }
  if (limiters.size() > 1) {
    print_table(limiters, out);
    out << '\n';
  }
  std::vector<Row> routes{{"ROUTE", "MATCH", "LIMITERS", "COST", "TARGET"}};
  for (const Route& route : config.routes) {
    routes.push_back({route.name, match_text(route.match), joined(route.limiters), cost_text(route),
                      target(route, config)});
  }
  print_table(routes, out);
  if (config.decide) {
    print_decide(config, out);
  }
}

}  // namespace sluice::cli
