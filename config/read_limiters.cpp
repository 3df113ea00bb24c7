#include "config/read_limiters.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>

#include "config/names.hpp"
#include "config/runtime_parameters.hpp"
#include "config/time_zones.hpp"
#include "limiter/make_limiter.hpp"

namespace sluice::config {
namespace {

using limiter::AlgorithmKind;

/// Each algorithm's own parameters, and the ones it cannot do without.
struct Parameters {
  std::vector<std::string_view> accepted;
  std::vector<std::string_view> required;
};

Parameters parameters_of(AlgorithmKind algorithm) {
  switch (algorithm) {
    case AlgorithmKind::fixed_window:  // `window`, or `calendar` (checked apart)
      return {{"limit", "window", "calendar", "timezone"}, {"limit"}};
    case AlgorithmKind::sliding_log:
    case AlgorithmKind::sliding_window:
      return {{"limit", "window"}, {"limit", "window"}};
    case AlgorithmKind::wheel:
      return {{"limit", "window", "slots"}, {"limit", "window"}};
    case AlgorithmKind::token_bucket:
      return {{"rate", "burst", "warmup", "cold_factor"}, {"rate"}};
    case AlgorithmKind::leaky_bucket:
      return {{"rate", "burst"}, {"rate"}};
    case AlgorithmKind::concurrency:
      return {{"limit"}, {"limit"}};
  }
  return {};
}

constexpr std::array<std::string_view, 9> kAllParameters{
    "limit", "window", "slots", "rate", "burst", "warmup", "cold_factor", "calendar", "timezone"};

/// Reads the algorithm parameters present in `reader` onto `options`.
void read_parameters(MapReader& reader, limiter::LimiterOptions& options) {
  if (auto limit = reader.whole_number("limit", 1, 4'294'967'295)) {
    options.limit = *limit;
  }
  if (auto window = reader.duration("window")) {
    options.window = *window;
  }
  if (auto slots = reader.whole_number("slots", 1, 100'000)) {
    options.slots = *slots;
  }
  if (auto rate = reader.rate("rate")) {
    options.rate = *rate;
  }
  if (auto burst = reader.number("burst", 0)) {
    options.burst = *burst;
  }
  if (auto warmup = reader.duration("warmup")) {
    options.warmup = *warmup;
  }
  if (auto cold_factor = reader.number("cold_factor", 1)) {
    options.cold_factor = *cold_factor;
  }
  using limiter::Calendar;
  if (auto calendar = reader.choice<Calendar>("calendar", {{"day", Calendar::day},
                                                           {"week", Calendar::week},
                                                           {"month", Calendar::month},
                                                           {"year", Calendar::year}})) {
    options.calendar = *calendar;
    options.window = {};  // a tier's or override's calendar replaces the limiter's window
  }
  if (auto zone = reader.text("timezone")) {
    std::string error;
    options.time_zone = time_zone_named(*zone, error);
    if (options.time_zone == nullptr) {
      reader.error("timezone", error);
    }
  }
}

/// A fixed window counts per `window` or per `calendar` period, one of the two; `timezone`
/// places calendar periods.
void check_window_or_calendar(MapReader& reader) {
  if (reader.has("window") && reader.has("calendar")) {
    reader.error("calendar",
                 "give window (a length) or calendar (day, week, month or year), "
                 "not both");
  } else if (!reader.has("window") && !reader.has("calendar")) {
    reader.error("window", "missing (fixed_window needs limit and window or calendar)");
  }
  if (reader.has("timezone") && !reader.has("calendar")) {
    reader.error("timezone", "places calendar windows: it needs calendar");
  }
}

/// Parameters written that `algorithm` does not use are mistakes worth a message.
void refuse_foreign_parameters(MapReader& reader, AlgorithmKind algorithm) {
  const Parameters own = parameters_of(algorithm);
  for (const std::string_view parameter : kAllParameters) {
    if (reader.has(parameter) &&
        std::find(own.accepted.begin(), own.accepted.end(), parameter) == own.accepted.end()) {
      reader.error(parameter, "does not apply to " + std::string(limiter::name_of(algorithm)) +
                                  " (its parameters: " + join_words(own.accepted, "and") + ")");
    }
  }
}

/// Builds the limiter to let the engine judge the parameters; its message names the parameter
/// ("limit must be at least 1, got 0"), which also tells where to point.
bool accepted_by_engine(MapReader& reader, const limiter::LimiterOptions& options,
                        const std::string& what) {
  try {
    limiter::make_limiter(options);
    return true;
  } catch (const std::invalid_argument& refusal) {
    const std::string message = refusal.what();
    std::string_view parameter = std::string_view(message).substr(0, message.find(' '));
    if (!reader.has(parameter)) {
      parameter = "algorithm";
    }
    reader.error(parameter, what + message);
    return false;
  }
}

/// A lease hands out permits taken earlier: it suits counts of permits, in reject mode.
void refuse_lease_where_it_cannot_work(MapReader& reader, const LimiterConfig& limiter) {
  const limiter::LimiterOptions& o = limiter.options;
  if (o.algorithm == AlgorithmKind::concurrency) {
    reader.error("lease", "does not apply to concurrency: its permits come back one by one");
  } else if (o.warmup > limiter::Duration::zero()) {
    reader.error("lease", "does not apply with warmup: the cost of a permit depends on its time");
  } else if (o.policy.mode == limiter::Mode::delay) {
    reader.error("lease", "applies in reject mode only: a delayed request needs its own time");
  } else if (o.algorithm != AlgorithmKind::token_bucket &&
             o.algorithm != AlgorithmKind::leaky_bucket && limiter.lease > o.limit) {
    reader.error("lease", "is more than the limit (" + std::to_string(o.limit) + ")");
  }
}

/// `cost: response` and `count_if: {status: [...]}`: charged once the response is over.
void read_charge_after_response(MapReader& reader, LimiterConfig& limiter) {
  if (auto cost = reader.choice<bool>("cost", {{"response", true}})) {
    limiter.cost_from_response = *cost;
  }
  if (auto section = reader.section("count_if", {"status"})) {
    if (section->require("status")) {
      for (const auto& [text, where] : section->located_texts("status")) {
        unsigned status = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), status);
        if (error != std::errc{} || end != text.data() + text.size() || status < 100 ||
            status > 599) {
          section->error("status", "\"" + text + "\" is not a status from 100 to 599");
        } else {
          limiter.count_if_status.push_back(status);
        }
      }
    }
  }
}

/// A charge settled after the response: the request is admitted before its cost is known.
void refuse_charge_after_response_where_it_cannot_work(MapReader& reader,
                                                       const LimiterConfig& limiter) {
  const std::string_view key = limiter.cost_from_response ? "cost" : "count_if";
  const std::string what = limiter.cost_from_response ? "cost: response" : "count_if";
  if (limiter.options.algorithm == AlgorithmKind::concurrency) {
    reader.error(key,
                 "does not apply to concurrency: it counts requests in flight, not what they "
                 "cost");
  } else if (limiter.options.policy.mode == limiter::Mode::delay) {
    reader.error("mode", "delay does not apply with " + what +
                             ": a request is admitted before its cost is known");
  } else if (limiter.lease != 0) {
    reader.error("lease", "does not apply with " + what +
                              " yet: a lease hands out permits counted before the request");
  }
}

/// `overrides` or `tiers`: key values (any text) mapped to parameters that start from the
/// limiter's own. Each value's parameters are checked, not the values.
std::vector<Override> read_other_parameters(MapReader& reader, std::string_view key,
                                            const limiter::LimiterOptions& options,
                                            ReadContext& context) {
  std::vector<Override> read;
  if (!reader.has(key)) {
    return read;
  }
  const YAML::Node map = reader.node(key);
  if (!map.IsMap()) {
    reader.error(key, "expected a mapping of key values to parameters");
    return read;
  }
  for (const auto& entry : map) {
    const std::string value = entry.first.Scalar();
    MapReader parameters(entry.second, reader.path(key) + "." + value,
                         parameters_of(options.algorithm).accepted, context);
    Override override;
    override.value = value;
    override.options = options;
    const std::size_t before = context.diagnostics.count();
    read_parameters(parameters, override.options);
    if (parameters.valid() && context.diagnostics.count() == before &&
        accepted_by_engine(parameters, override.options, "")) {
      read.push_back(std::move(override));
    }
  }
  return read;
}

LimiterConfig read_limiter(const std::string& name, const YAML::Node& node, std::uint64_t max_keys,
                           ReadContext& context) {
  MapReader reader(node, "limiters." + name,
                   {"algorithm", "limit",     "window", "calendar",    "timezone", "slots",
                    "rate",      "burst",     "warmup", "cold_factor", "key",      "ipv6_prefix",
                    "mode",      "max_delay", "shadow", "status",      "lease",    "overrides",
                    "tier",      "tiers",     "cost",   "count_if"},
                   context);
  const std::size_t problems_before = context.diagnostics.count();
  LimiterConfig limiter;
  limiter.name = name;
  limiter.at = reader.at();
  limiter.options.max_keys = max_keys;
  if (!reader.valid() && !node.IsNull()) {
    return limiter;  // not a mapping: reported; an empty value reads as an empty mapping
  }
  std::optional<AlgorithmKind> algorithm;
  if (reader.require("algorithm")) {
    algorithm = reader.choice<AlgorithmKind>("algorithm",
                                             {{"fixed_window", AlgorithmKind::fixed_window},
                                              {"sliding_log", AlgorithmKind::sliding_log},
                                              {"sliding_window", AlgorithmKind::sliding_window},
                                              {"wheel", AlgorithmKind::wheel},
                                              {"token_bucket", AlgorithmKind::token_bucket},
                                              {"leaky_bucket", AlgorithmKind::leaky_bucket},
                                              {"concurrency", AlgorithmKind::concurrency}});
  }
  read_parameters(reader, limiter.options);

  limiter.key = KeySpec{.text = "ip", .parts = {KeyPart{}}};
  if (const std::optional<std::string> key = reader.text("key")) {
    std::string problem;
    if (std::optional<KeySpec> spec = parse_key(*key, problem)) {
      limiter.key = std::move(*spec);
    } else {
      reader.error("key", problem);
    }
  }
  if (auto prefix = reader.whole_number("ipv6_prefix", 1, 128)) {
    limiter.ipv6_prefix = static_cast<unsigned>(*prefix);
  }
  if (auto mode = reader.choice<limiter::Mode>(
          "mode", {{"reject", limiter::Mode::reject}, {"delay", limiter::Mode::delay}})) {
    limiter.options.policy.mode = *mode;
  }
  if (auto max_delay = reader.duration("max_delay")) {
    limiter.options.policy.max_delay = *max_delay;
  }
  if (auto shadow = reader.flag("shadow")) {
    limiter.shadow = *shadow;
  }
  if (auto status = reader.whole_number("status", 400, 599)) {
    limiter.status = static_cast<unsigned>(*status);
  }
  if (auto lease = reader.whole_number("lease", 1, 1'000'000'000)) {
    limiter.lease = *lease;
  }
  read_charge_after_response(reader, limiter);
  if (!algorithm) {
    return limiter;
  }
  limiter.options.algorithm = *algorithm;
  refuse_foreign_parameters(reader, *algorithm);
  bool complete = true;
  for (const std::string_view required : parameters_of(*algorithm).required) {
    if (!reader.has(required)) {
      reader.error(required, "missing (" + std::string(limiter::name_of(*algorithm)) + " needs " +
                                 join_words(parameters_of(*algorithm).required, "and") + ")");
      complete = false;
    }
  }
  if (*algorithm == AlgorithmKind::fixed_window) {
    const std::size_t before = context.diagnostics.count();
    check_window_or_calendar(reader);
    complete = complete && context.diagnostics.count() == before;
  }
  if (*algorithm == AlgorithmKind::token_bucket) {
    const bool warms_up = limiter.options.warmup > limiter::Duration::zero();
    if (warms_up && reader.has("burst")) {
      reader.error("burst",
                   "does not apply with warmup (Guava's warm-up sets its own maximum of stored "
                   "permits)");
    }
    if (!warms_up && reader.has("cold_factor")) {
      reader.error("cold_factor", "applies only with warmup");
    }
  }
  if (limiter.lease != 0) {
    refuse_lease_where_it_cannot_work(reader, limiter);
  }
  if (limiter.settled_later()) {
    refuse_charge_after_response_where_it_cannot_work(reader, limiter);
  }
  if (*algorithm == AlgorithmKind::concurrency &&
      limiter.options.policy.mode == limiter::Mode::delay) {
    reader.error("mode",
                 "delay does not apply to concurrency: when a permit comes back is not known");
  }
  // Judge the parameters only once each of them has read cleanly: a value that failed to read
  // would otherwise be blamed a second time, as a default the user never wrote.
  if (!complete || context.diagnostics.count() != problems_before ||
      !accepted_by_engine(reader, limiter.options, "")) {
    return limiter;
  }
  limiter.valid = true;

  limiter.overrides = read_other_parameters(reader, "overrides", limiter.options, context);
  limiter.tiers = read_other_parameters(reader, "tiers", limiter.options, context);
  if (const std::optional<std::string> tier = reader.text("tier")) {
    std::string problem;
    limiter.tier = parse_key(*tier, problem);
    if (!limiter.tier) {
      reader.error("tier", problem);
    }
  }
  if (reader.has("tier") != reader.has("tiers")) {
    reader.error(reader.has("tier") ? "tier" : "tiers",
                 "tier (the key whose value chooses) and tiers (each value's parameters) go "
                 "together");
  }
  return limiter;
}

}  // namespace

std::optional<KeyPart> parse_key_part(std::string_view text) {
  const std::size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  const std::string_view name = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  const bool named = colon != std::string_view::npos;
  using Kind = KeyPart::Kind;
  if (!named) {
    if (kind == "ip") {
      return KeyPart{Kind::ip, ""};
    }
    if (kind == "bearer") {
      return KeyPart{Kind::bearer, ""};
    }
    if (kind == "route") {
      return KeyPart{Kind::route, ""};
    }
    if (kind == "global") {
      return KeyPart{Kind::global, ""};
    }
    return std::nullopt;
  }
  if (name.empty()) {
    return std::nullopt;
  }
  if (kind == "header") {
    return KeyPart{Kind::header, std::string(name)};
  }
  if (kind == "cookie") {
    return KeyPart{Kind::cookie, std::string(name)};
  }
  if (kind == "query") {
    return KeyPart{Kind::query, std::string(name)};
  }
  if (kind == "jwt") {
    // A dotted path into the claims ("org.id"): no empty step, nothing but printable ASCII.
    const bool plain =
        std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c <= '~'; });
    if (!plain || name.front() == '.' || name.back() == '.' ||
        name.find("..") != std::string_view::npos) {
      return std::nullopt;
    }
    return KeyPart{Kind::jwt, std::string(name)};
  }
  if (kind == "cert") {
    for (const auto& [field, certificate_kind] :
         {std::pair{"subject", Kind::cert_subject}, std::pair{"san", Kind::cert_san},
          std::pair{"fingerprint", Kind::cert_fingerprint}}) {
      if (name == field) {
        return KeyPart{certificate_kind, ""};
      }
    }
  }
  return std::nullopt;
}

std::optional<KeySpec> parse_key(std::string_view text, std::string& problem) {
  KeySpec spec{.text = std::string(text), .parts = {}};
  std::size_t start = 0;
  while (true) {
    const std::size_t plus = text.find('+', start);
    const std::string_view part = text.substr(start, plus - start);
    std::optional<KeyPart> parsed = parse_key_part(part);
    if (!parsed) {
      problem = "\"" + std::string(part) +
                "\" is not a key part; use ip, header:NAME, bearer, cookie:NAME, query:NAME, "
                "cert:subject, cert:san, cert:fingerprint, jwt:CLAIM (a dotted path: jwt:org.id), "
                "route or global, joined with + (ip+header:X-User)";
      return std::nullopt;
    }
    spec.parts.push_back(std::move(*parsed));
    if (plus == std::string_view::npos) {
      break;
    }
    start = plus + 1;
  }
  const bool has_global = std::any_of(spec.parts.begin(), spec.parts.end(), [](const KeyPart& p) {
    return p.kind == KeyPart::Kind::global;
  });
  if (has_global && spec.parts.size() > 1) {
    problem = "global is one bucket for every request and cannot be joined with other parts";
    return std::nullopt;
  }
  return spec;
}

std::vector<LimiterConfig> read_limiters(const YAML::Node& node, std::uint64_t max_keys,
                                         ReadContext& context) {
  std::vector<LimiterConfig> limiters;
  if (!node.IsMap()) {
    if (!node.IsNull()) {
      context.diagnostics.error(location_of(node),
                                "limiters: expected a mapping of limiter names to limiters");
    }
    return limiters;
  }
  for (const auto& entry : node) {
    if (!plain_name(entry.first.Scalar())) {
      context.diagnostics.error(location_of(entry.first),
                                "limiters: " + plain_name_problem(entry.first.Scalar()));
    }
    limiters.push_back(read_limiter(entry.first.Scalar(), entry.second, max_keys, context));
  }
  return limiters;
}

std::optional<limiter::LimiterOptions> read_runtime_parameters(
    std::string_view text, const limiter::LimiterOptions& options,
    std::vector<std::string>& problems) {
  YAML::Node node;
  try {
    node = YAML::Load(std::string(text));  // a JSON object is a YAML mapping
  } catch (const YAML::Exception&) {
    problems.emplace_back("the parameters are not a JSON object");
    return std::nullopt;
  }
  const std::vector<std::string_view>& accepted = parameters_of(options.algorithm).accepted;
  if (!node.IsMap() || node.size() == 0) {
    problems.push_back("give the parameters to change as an object of " +
                       join_words(accepted, "or") + " (" +
                       std::string(limiter::name_of(options.algorithm)) + ")");
    return std::nullopt;
  }
  Diagnostics diagnostics("");
  const Environment no_variables = [](std::string_view) { return std::optional<std::string>(); };
  ReadContext context{diagnostics, no_variables};
  MapReader reader(node, "", accepted, context);
  limiter::LimiterOptions read = options;
  read_parameters(reader, read);
  if (diagnostics.empty()) {
    accepted_by_engine(reader, read, "");
  }
  try {
    diagnostics.throw_if_any();
  } catch (const ConfigError& error) {
    for (const Diagnostic& diagnostic : error.diagnostics()) {
      problems.push_back(diagnostic.message);
    }
    return std::nullopt;
  }
  return read;
}

}  // namespace sluice::config
