#include "proxy/http/forward_auth.hpp"

#include "proxy/http/message_syntax.hpp"
#include "proxy/pipeline/http_text.hpp"

namespace sluice::http {
namespace {

/// The value of the field `name`, "" if absent; a repeated field must repeat its value, else
/// `problem` says so.
std::string_view single_value(const HeadFields& fields, std::string_view name,
                              std::string& problem) {
  std::string_view found;
  bool seen = false;
  for (const pipeline::Header& header : fields.headers()) {
    if (!pipeline::equal_ignoring_case(header.name, name)) {
      continue;
    }
    if (seen && header.value != found && problem.empty()) {
      problem = std::string(name) + " is sent twice with different values";
    }
    found = header.value;
    seen = true;
  }
  return found;
}

/// The value of one of two spellings of a field (`first` wins; both must agree when both are
/// sent), or "".
std::string_view either_value(const HeadFields& fields, std::string_view first,
                              std::string_view second, std::string& problem) {
  const std::string_view a = single_value(fields, first, problem);
  const std::string_view b = single_value(fields, second, problem);
  if (!a.empty() && !b.empty() && a != b && problem.empty()) {
    problem = std::string(first) + " and " + std::string(second) + " disagree";
  }
  return a.empty() ? b : a;
}

bool is_token(std::string_view text) noexcept {
  if (text.empty()) {
    return false;
  }
  for (const char c : text) {
    if (!syntax::is_tchar(c)) {
      return false;
    }
  }
  return true;
}

bool is_proto(std::string_view proto) noexcept {
  for (const std::string_view known : {"http", "https", "ws", "wss"}) {
    if (pipeline::equal_ignoring_case(proto, known)) {
      return true;
    }
  }
  return false;
}

}  // namespace

DescribedRequest describe(const RequestHead& check) {
  const HeadFields& fields = check.head();
  DescribedRequest described;
  std::string& problem = described.problem;
  const std::string_view method =
      either_value(fields, "X-Forwarded-Method", "X-Original-Method", problem);
  const std::string_view target =
      either_value(fields, "X-Forwarded-Uri", "X-Original-URI", problem);
  const std::string_view host = single_value(fields, "X-Forwarded-Host", problem);
  const std::string_view proto = single_value(fields, "X-Forwarded-Proto", problem);
  if (!problem.empty()) {
    return described;
  }
  described.method = method.empty() ? check.method_string : method;
  described.target = target.empty() ? check.target : target;
  described.host = host.empty() ? fields.value_of(http::field::host) : host;
  if (!is_token(described.method)) {
    problem = "the method (X-Forwarded-Method or X-Original-Method) is not an HTTP method";
  } else if (described.target.empty() || described.target.front() != '/' ||
             !syntax::valid_target_bytes(described.target)) {
    problem = "the URI (X-Forwarded-Uri or X-Original-URI) is not a path and query (\"/...\")";
  } else if (!syntax::valid_host(described.host)) {
    problem = "X-Forwarded-Host is not a host[:port]";
  } else if (!proto.empty() && !is_proto(proto)) {
    problem = "X-Forwarded-Proto is none of http, https, ws, wss";
  }
  return described;
}

}  // namespace sluice::http
