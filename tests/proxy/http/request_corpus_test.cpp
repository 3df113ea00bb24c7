// Third-party request corpora through the proxy, as oracles of HTTP/1.1 framing
// (docs/http-conformance.md, "Strict HTTP/1.1": the corpus table). Each case's raw bytes go to the
// proxy on a connection of their own, in front of an upstream that records what it receives whole;
// what the proxy forwarded and answered is compared with what the corpus's parser made of the same
// bytes:
// - llhttp (tests/data/http1/llhttp_requests.json, made from nodejs/llhttp's request fixtures by
//   llhttp_to_json.py): the messages it read whole are forwarded with the same method, target,
//   end-to-end fields and body, and answered in order; where it stops with an error the proxy
//   answers 400 (or 501) and closes, at once, and forwards nothing of that message; a message
//   it waits on is never forwarded whole. A case where the proxy is deliberately stricter is
//   listed below with the rule it follows, and must be refused as listed.
// - HAProxy's reg-tests and Apache httpd's http_strict.t (haproxy_requests.json,
//   httpd_strict_requests.json): what they expect a strict server to accept or refuse.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/pipeline/http_text.hpp"
#include "tests/support/proxy_fixture.hpp"
#include "tests/support/recording_upstream.hpp"

namespace sluice::test {
namespace {

namespace json = boost::json;
using pipeline::equal_ignoring_case;

/// How long a case may take to be answered: far less than the proxy's own timeouts (20 s), so
/// that a request waiting on a timeout where its bytes already prove it malformed fails here.
constexpr int kAnswerDeadlineSeconds = 3;

/// A message as the reference parser read it.
struct ReadMessage {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  bool complete = false;
};

/// One case of a corpus: bytes, and the reference parser's verdict on them.
struct CorpusCase {
  std::string id;
  std::string request;
  bool finish = false;     ///< The client ends its side after the bytes (llhttp_finish).
  bool skip_body = false;  ///< The harness told the parser to skip bodies: not a server's case.
  std::vector<ReadMessage> messages;
  std::optional<std::string> error;  ///< Where the parser stopped, refusing.
  bool finish_error = false;         ///< The end of the input cut a message short.
  bool upgrade = false;              ///< The parser stopped at a protocol switch.
  std::string tunneled;              ///< What follows the switch.
};

/// A JSON string whose characters each stand for one byte (U+0000..U+00FF).
std::string bytes_of(const json::value& value) {
  const json::string& text = value.as_string();
  std::string bytes;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const auto c = static_cast<unsigned char>(text[at]);
    if (c < 0x80) {
      bytes += static_cast<char>(c);
    } else {  // U+0080..U+00FF, two bytes of UTF-8
      bytes +=
          static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[++at]) & 0x3f));
    }
  }
  return bytes;
}

json::value read_json(const std::string& name) {
  std::ifstream file(std::string(SLUICE_SOURCE_DIR) + "/tests/data/http1/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return json::parse(text.str());
}

std::vector<CorpusCase> llhttp_cases() {
  std::vector<CorpusCase> cases;
  const json::value corpus = read_json("llhttp_requests.json");
  for (const json::value& entry : corpus.as_array()) {
    const json::object& object = entry.as_object();
    CorpusCase c;
    c.id = std::string(object.at("id").as_string());
    c.request = bytes_of(object.at("request"));
    c.finish = object.at("finish").as_bool();
    c.skip_body = object.at("skip_body").as_bool();
    for (const json::value& message : object.at("messages").as_array()) {
      const json::object& m = message.as_object();
      ReadMessage read;
      read.method = bytes_of(m.at("method"));
      read.target = bytes_of(m.at("target"));
      read.body = bytes_of(m.at("body"));
      read.complete = m.at("complete").as_bool();
      for (const json::value& field : m.at("headers").as_array()) {
        read.fields.emplace_back(bytes_of(field.as_array()[0]), bytes_of(field.as_array()[1]));
      }
      c.messages.push_back(std::move(read));
    }
    if (!object.at("error").is_null()) {
      c.error = bytes_of(object.at("error"));
    }
    if (const json::value* finish_error = object.if_contains("finish_error")) {
      c.finish_error = finish_error->as_bool();
    }
    c.upgrade = object.at("upgrade").as_bool();
    if (const json::value* tunneled = object.if_contains("tunneled")) {
      c.tunneled = bytes_of(*tunneled);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

/// What the proxy did with a case's bytes: the statuses of its answers, in order, whether it
/// closed the connection in time, and what the upstream received whole.
struct Outcome {
  std::vector<unsigned> statuses;
  bool closed = false;
  bool unreadable = false;  ///< What came back is no sequence of responses.
  std::vector<ReceivedRequest> forwarded;
};

/// Sends `bytes` on a new connection (then ends the client's side if `end_input`), reads until
/// the proxy closes or the deadline passes, and reads the answers: a response to a HEAD
/// request has no body whatever its Content-Length (`methods` says which answer is to HEAD).
Outcome run(unsigned short port, RecordingUpstream& upstream, const std::string& bytes,
            bool end_input, const std::vector<std::string>& methods,
            int deadline_seconds = kAnswerDeadlineSeconds) {
  upstream.take();
  net::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  const timeval deadline{.tv_sec = deadline_seconds, .tv_usec = 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  net::write(socket, net::buffer(bytes));
  if (end_input) {
    socket.shutdown(tcp::socket::shutdown_send);
  }
  Outcome outcome;
  std::string received;
  for (;;) {
    std::array<char, 4096> chunk;
    const ssize_t n = ::recv(socket.native_handle(), chunk.data(), chunk.size(), 0);
    if (n <= 0) {
      outcome.closed = n == 0 || errno == ECONNRESET;
      break;
    }
    received.append(chunk.data(), static_cast<std::size_t>(n));
  }
  // The answers, one after the other; a 101 ends them (the rest is the tunnel's).
  beast::flat_buffer buffer;
  net::buffer_copy(buffer.prepare(received.size()), net::buffer(received));
  buffer.commit(received.size());
  while (buffer.size() > 0) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    const std::size_t index = outcome.statuses.size();
    parser.skip(index < methods.size() && methods[index] == "HEAD");
    beast::error_code ec;
    buffer.consume(parser.put(buffer.data(), ec));
    if (!ec && !parser.is_done() && parser.is_header_done()) {
      parser.put_eof(ec);
    }
    if (ec || !parser.is_header_done()) {
      outcome.unreadable = true;
      break;
    }
    outcome.statuses.push_back(parser.get().result_int());
    if (parser.get().result_int() == 101) {
      break;
    }
  }
  outcome.forwarded = upstream.take();
  return outcome;
}

std::string trimmed(std::string_view text) { return std::string(pipeline::trim_whitespace(text)); }

/// Fields a proxy does not pass on as received: the connection's own (RFC 9110 §7.6.1), those
/// its Connection fields name, the framing (which it writes anew) and the expectation it
/// answers itself; and the forwarding fields it writes.
bool hop_by_hop(std::string_view name,
                const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const std::string_view own :
       {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "content-length", "expect", "x-forwarded-for", "x-forwarded-proto",
        "x-forwarded-host", "x-request-id"}) {
    if (equal_ignoring_case(name, own)) {
      return true;
    }
  }
  for (const auto& [field, value] : fields) {
    if (!equal_ignoring_case(field, "connection")) {
      continue;
    }
    std::string_view options(value);
    while (!options.empty()) {
      const std::size_t comma = std::min(options.find(','), options.size());
      if (equal_ignoring_case(pipeline::trim_whitespace(options.substr(0, comma)), name)) {
        return true;
      }
      options.remove_prefix(std::min(comma + 1, options.size()));
    }
  }
  return false;
}

/// The end-to-end fields, values without their surrounding whitespace, names in lower case.
std::vector<std::pair<std::string, std::string>> end_to_end(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<std::pair<std::string, std::string>> kept;
  for (const auto& [name, value] : fields) {
    if (!hop_by_hop(name, fields)) {
      std::string lower(name);
      for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      kept.emplace_back(std::move(lower), trimmed(value));
    }
  }
  return kept;
}

/// The target a gateway forwards: an absolute-form's path and query (RFC 9112 §3.2.2).
std::string origin_form(const std::string& target) {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() &&
        equal_ignoring_case(std::string_view(target).substr(0, scheme.size()), scheme)) {
      const std::size_t path = target.find_first_of("/?", scheme.size());
      if (path == std::string::npos) {
        return "/";
      }
      return target[path] == '?' ? "/" + target.substr(path) : target.substr(path);
    }
  }
  return target;
}

/// An absolute-form target's authority, which takes the Host field's place; "" for another.
std::string authority_of(const std::string& target) {
  const std::size_t scheme = target.find("://");
  if (scheme == std::string::npos || target.front() == '/') {
    return "";
  }
  const std::size_t end = std::min(target.find_first_of("/?", scheme + 3), target.size());
  return target.substr(scheme + 3, end - scheme - 3);
}

/// How what the upstream got differs from `read` as the reference parser read it; "" if not.
/// Trailer fields are not among `read.fields`: the proxy drops them (RFC 9112 §7.1.2 lets a
/// recipient that removes the chunked coding discard them), so that one the upstream got fails.
std::string forwarding_difference(const ReceivedRequest& got, const ReadMessage& read) {
  std::ostringstream out;
  if (got.method != read.method) {
    out << "method " << got.method << " for " << read.method << "; ";
  }
  if (got.target != origin_form(read.target)) {
    out << "target " << got.target << " for " << read.target << "; ";
  }
  std::vector<std::pair<std::string, std::string>> fields = read.fields;
  if (const std::string authority = authority_of(read.target); !authority.empty()) {
    for (auto& [name, value] : fields) {  // RFC 9112 §3.2.2
      if (equal_ignoring_case(name, "host")) {
        value = authority;
      }
    }
  }
  if (end_to_end(got.fields) != end_to_end(fields)) {
    std::string shown;
    for (const auto& [name, value] : got.fields) {
      shown += name + ": " + value + " | ";
    }
    out << "fields differ: got " << shown << "; ";
  }
  if (got.body != read.body) {
    out << "body of " << got.body.size() << " bytes for " << read.body.size() << "; ";
  }
  return out.str();
}

/// The answers and forwarded requests a case should have: `statuses` in order (0: any refusal,
/// 400 or 501), the connection closed, and each of `forwarded` passed on as read. How the
/// outcome differs; "" if it does not.
std::string difference(const Outcome& outcome, std::vector<unsigned> statuses,
                       const std::vector<const ReadMessage*>& forwarded,
                       const std::string* tunneled = nullptr, bool cut_short = false,
                       bool expect_closed = true) {
  // A message the end of the input cut short may be answered 400, or just closed.
  if (cut_short && outcome.statuses.size() == statuses.size() + 1 &&
      outcome.statuses.back() == 400) {
    statuses.push_back(400);
  }
  std::ostringstream out;
  const auto list = [](const std::vector<unsigned>& values) {
    std::string text;
    for (const unsigned value : values) {
      text += (text.empty() ? "" : " ") + std::to_string(value);
    }
    return "[" + text + "]";
  };
  bool same = outcome.statuses.size() == statuses.size();
  for (std::size_t i = 0; same && i < statuses.size(); ++i) {
    const unsigned got = outcome.statuses[i];
    same = statuses[i] == 0 ? (got == 400 || got == 501) : got == statuses[i];
  }
  if (!same || outcome.unreadable) {
    out << "answered " << list(outcome.statuses) << (outcome.unreadable ? " and garbage" : "")
        << ", expected " << list(statuses) << "; ";
  }
  if (!outcome.closed && expect_closed) {
    out << "still open at the deadline; ";
  }
  if (outcome.forwarded.size() != forwarded.size()) {
    out << "forwarded " << outcome.forwarded.size() << " whole, expected " << forwarded.size()
        << "; ";
  } else {
    for (std::size_t i = 0; i < forwarded.size(); ++i) {
      out << forwarding_difference(outcome.forwarded[i], *forwarded[i]);
    }
    if (tunneled != nullptr && !forwarded.empty() &&
        outcome.forwarded.back().tunneled != *tunneled) {
      out << "tunneled " << outcome.forwarded.back().tunneled.size() << " bytes, expected "
          << tunneled->size() << "; ";
    }
  }
  return out.str();
}

/// A case where the proxy deliberately parts from llhttp: the rule it follows, what it answers
/// (no answer at all: it waits for more, and closes at its own timeout), and how many of
/// llhttp's messages it forwards first.
struct Listed {
  std::string_view rule;
  std::vector<unsigned> statuses;
  std::size_t forwarded = 0;
  bool closed = true;  ///< Closed within the deadline (else it still waits).
};

const Listed kNoHost{"HTTP/1.1 without Host: 400 (RFC 9112 §3.2 MUST)", {400}};
const Listed kConnect{"CONNECT: 501, a gateway opens no tunnels (RFC 9110 §9.3.6)", {501}};
const Listed kFragment{
    "a fragment in the target: 400; it is no part of a request-target (RFC 9112 §3.2), and a "
    "proxy and an upstream can read the path apart (HAProxy refuses it too)",
    {400}};
const Listed kUserinfo{"userinfo in an absolute-form target: 400 (RFC 9110 §4.2.4)", {400}};
const Listed kAsterisk{"asterisk-form for a method other than OPTIONS: 400 (RFC 9112 §3.2.4)",
                       {400}};
const Listed kHeadNeverEnds{
    "the head has not ended: its fields are read once it has (Beast), and a head that never "
    "ends is answered at the header timeout",
    {},
    0,
    false};
const Listed kExtensionMethod{
    "forwarded: a method is any token (RFC 9110 §9.1) and a gateway passes on one it does not "
    "know, for the origin to answer 501 (nginx and HAProxy do); llhttp knows a fixed list and "
    "takes ANNOUNCE for RTSP's",
    {200},
    1};

const std::map<std::string, Listed, std::less<>>& listed_differences() {
  static const std::map<std::string, Listed, std::less<>> cases = {
      {"sample.md:6", kNoHost},
      {"sample.md:39", kNoHost},
      {"sample.md:168", kNoHost},
      {"sample.md:196", kNoHost},
      {"sample.md:219", kNoHost},
      {"sample.md:288", kNoHost},
      {"sample.md:314", kNoHost},
      {"sample.md:478", kNoHost},
      {"sample.md:506", kNoHost},
      {"sample.md:536", kNoHost},
      {"method.md:4", kNoHost},
      {"method.md:27", kConnect},
      {"method.md:62", kConnect},
      {"method.md:96", kConnect},
      {"method.md:135", kNoHost},
      {"method.md:372", kNoHost},
      {"method.md:400", kNoHost},
      {"method.md:430", kNoHost},
      {"method.md:458", kAsterisk},
      {"method.md:458+host", kAsterisk},
      {"uri.md:4", kNoHost},
      {"uri.md:27", kNoHost},
      {"uri.md:52", kNoHost},
      {"uri.md:75", kNoHost},
      {"uri.md:98", kNoHost},
      {"uri.md:125", kNoHost},
      {"uri.md:165", kNoHost},
      {"uri.md:165+host", kFragment},
      {"uri.md:188", kConnect},
      {"uri.md:222", kNoHost},
      {"uri.md:222+host", kUserinfo},
      {"connection.md:6", kNoHost},
      {"connection.md:34", kNoHost},
      {"connection.md:236", kNoHost},
      {"connection.md:264", kNoHost},
      {"connection.md:453", kNoHost},
      {"connection.md:542", kNoHost},
      {"connection.md:679", kNoHost},
      {"connection.md:713", kNoHost},
      {"content-length.md:4", kNoHost},
      {"content-length.md:33", kNoHost},
      {"content-length.md:75", kHeadNeverEnds},
      {"content-length.md:75+host", kHeadNeverEnds},
      {"content-length.md:100", kHeadNeverEnds},
      {"content-length.md:100+host", kHeadNeverEnds},
      {"content-length.md:290", kNoHost},
      {"content-length.md:317", kNoHost},
      {"transfer-encoding.md:6", kNoHost},
      {"transfer-encoding.md:33", kNoHost},
      {"transfer-encoding.md:70", kNoHost},
      {"transfer-encoding.md:107", kNoHost},
      {"transfer-encoding.md:144", kNoHost},
      {"transfer-encoding.md:186", kNoHost},
      {"transfer-encoding.md:238", kNoHost},
      {"transfer-encoding.md:366", kNoHost},
      {"transfer-encoding.md:751", kNoHost},
      {"transfer-encoding.md:751+host", kFragment},
      {"transfer-encoding.md:793", kNoHost},
      {"transfer-encoding.md:793+host", kFragment},
      {"invalid.md:66", kExtensionMethod},
      {"finish.md:6", kNoHost},
      {"finish.md:30", kNoHost},
      {"finish.md:55", kNoHost},
      {"pipelining.md:4", kNoHost},
  };
  return cases;
}

/// The proxy's ports in front of a RecordingUpstream, with timeouts far above the deadline.
struct CorpusProxy {
  RecordingUpstream upstream;
  ProxyFixture proxy{"routes: [{name: all, upstream: \"" + upstream.url() + "\"}]",
                     "threads: 1\nlog: {access: false}\ntimeouts: {header: 20s, idle: 20s}"};
};

TEST(RequestCorpus, LlhttpStrictFixturesAgreeOrDifferAsListed) {
  CorpusProxy corpus;
  const std::vector<CorpusCase> cases = llhttp_cases();
  ASSERT_GE(cases.size(), 190u);
  int agreed = 0;
  int listed_count = 0;
  int not_applicable = 0;
  std::string disagreements;
  for (const CorpusCase& c : cases) {
    if (c.skip_body) {
      ++not_applicable;  // a parser option a server never turns on for requests
      continue;
    }
    std::vector<std::string> methods;
    std::vector<const ReadMessage*> complete;
    for (const ReadMessage& message : c.messages) {
      methods.push_back(message.method);
      if (message.complete) {
        complete.push_back(&message);
      }
    }
    const bool data_after_close =
        c.error && c.error->find("Data after `Connection: close`") != std::string::npos;
    const bool refused = c.error.has_value() && !data_after_close;
    // A client that sent all it had ends its side; one the parser refused does not, so that
    // the proxy's answer cannot come from the end of the input.
    const auto listed = listed_differences().find(c.id);
    const bool waits = listed != listed_differences().end() && !listed->second.closed;
    // (A case the proxy is to wait on is given a second: it is still waiting then.)
    const Outcome outcome = run(corpus.proxy.port(), corpus.upstream, c.request,
                                c.finish || !refused, methods, waits ? 1 : kAnswerDeadlineSeconds);
    std::string differs;
    if (listed != listed_differences().end()) {
      ++listed_count;
      const Listed& rule = listed->second;
      const std::size_t compared = std::min(rule.forwarded, complete.size());
      differs =
          difference(outcome, rule.statuses,
                     {complete.begin(), complete.begin() + static_cast<std::ptrdiff_t>(compared)},
                     nullptr, false, rule.closed);
      if (compared < rule.forwarded && outcome.forwarded.size() == rule.forwarded) {
        differs.clear();  // forwarded what llhttp refused to read whole: counted, not compared
        if (outcome.statuses != rule.statuses || !outcome.closed) {
          differs = "answered differently from the listed rule; ";
        }
      }
      if (!differs.empty()) {
        differs += "(listed: " + std::string(rule.rule) + ") ";
      }
    } else {
      ++agreed;
      std::vector<unsigned> statuses(complete.size(), 200u);
      if (c.upgrade && !complete.empty()) {
        statuses.back() = 101;
      }
      if (refused) {
        statuses.push_back(0);
      }
      const bool cut_short =
          !refused && !c.upgrade &&
          (c.finish_error || (!c.messages.empty() && !c.messages.back().complete));
      differs =
          difference(outcome, statuses, complete, c.upgrade ? &c.tunneled : nullptr, cut_short);
    }
    if (!differs.empty()) {
      disagreements += c.id + ": " + differs + "\n";
    }
  }
  EXPECT_EQ(disagreements, "");
  std::cout << "llhttp strict fixtures: " << agreed << " agree, " << listed_count
            << " differ as listed, " << not_applicable << " not applicable\n";
}

/// A case of a corpus that gives a verdict rather than a parse: HAProxy's reg-tests, Apache
/// httpd's http_strict.t (tests/data/http1/*_requests.json, SOURCES in that folder).
struct VerdictCase {
  std::string id;
  std::string request;
  bool forwarded = false;  ///< The verdict: forwarded, else refused.
  unsigned status = 0;     ///< The refusal's status, when the source says (else any 4xx/5xx).
  std::size_t forwarded_before = 0;  ///< Requests forwarded before the refused one.
};

std::vector<VerdictCase> verdict_cases(const std::string& file) {
  std::vector<VerdictCase> cases;
  const json::value corpus = read_json(file);
  for (const json::value& entry : corpus.as_array()) {
    const json::object& object = entry.as_object();
    VerdictCase c;
    c.id = std::string(object.at("id").as_string());
    c.request = bytes_of(object.at("request"));
    c.forwarded = object.at("verdict").as_string() == "forwarded";
    if (const json::value* status = object.if_contains("status")) {
      c.status = static_cast<unsigned>(status->as_int64());
    }
    if (const json::value* before = object.if_contains("forwarded_before")) {
      c.forwarded_before = static_cast<std::size_t>(before->as_int64());
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

/// Where the proxy parts from a verdict corpus on purpose: what it answers instead, and why.
struct VerdictDifference {
  std::string_view rule;
  std::vector<unsigned> statuses;  ///< Its answers, in order.
  bool closed = true;              ///< Closed within the deadline (else it still waits).
};

/// Runs every case of `file` and returns the disagreements with its verdicts that `listed`
/// does not explain (and the listed ones that no longer hold), one line each.
std::string verdict_disagreements(
    const std::string& file, const std::map<std::string, VerdictDifference, std::less<>>& listed,
    int& agreed) {
  CorpusProxy corpus;
  std::string disagreements;
  for (const VerdictCase& c : verdict_cases(file)) {
    const auto difference = listed.find(c.id);
    // A client whose request is to pass ends its side after it; one to be refused does not, so
    // that the refusal cannot come from the end of the input.
    bool passes = c.forwarded;
    int deadline = kAnswerDeadlineSeconds;
    if (difference != listed.end()) {
      const std::vector<unsigned>& statuses = difference->second.statuses;
      passes = std::all_of(statuses.begin(), statuses.end(),
                           [](unsigned status) { return status < 400; });
      deadline = difference->second.closed ? deadline : 1;
    }
    const Outcome outcome =
        run(corpus.proxy.port(), corpus.upstream, c.request, passes, {}, deadline);
    std::string differs;
    if (difference != listed.end()) {
      if (outcome.statuses != difference->second.statuses ||
          outcome.closed != difference->second.closed) {
        differs = "answered otherwise than listed (" + std::string(difference->second.rule) + ")";
      }
    } else {
      ++agreed;
      const auto refusal = [&c](unsigned status) {
        return c.status != 0 ? status == c.status : status >= 400;
      };
      bool agrees = outcome.closed && !outcome.unreadable;
      if (c.forwarded) {
        agrees = agrees && !outcome.statuses.empty() && !outcome.forwarded.empty();
        for (const unsigned status : outcome.statuses) {
          agrees = agrees && (status == 200 || status == 101);
        }
      } else {
        // Without a status, the source expects the rest of the bytes dropped after the
        // requests forwarded (junk after `Connection: close`): a refusal or none.
        const bool silent = c.status == 0 && c.forwarded_before > 0 &&
                            outcome.statuses.size() == c.forwarded_before;
        agrees = agrees &&
                 (silent || (outcome.statuses.size() == c.forwarded_before + 1 &&
                             refusal(outcome.statuses.back()))) &&
                 outcome.forwarded.size() == c.forwarded_before;
      }
      if (!agrees) {
        differs = "expected " + std::string(c.forwarded ? "forwarded" : "refused");
      }
    }
    if (!differs.empty()) {
      std::string statuses;
      for (const unsigned status : outcome.statuses) {
        statuses += " " + std::to_string(status);
      }
      disagreements += c.id + ": answered [" + statuses + " ], forwarded " +
                       std::to_string(outcome.forwarded.size()) +
                       (outcome.closed ? "" : ", still open") + "; " + differs + "\n";
    }
  }
  return disagreements;
}

const VerdictDifference kConnectAnyway{
    "CONNECT: 501 whatever its authority, a gateway opens no tunnels (RFC 9110 §9.3.6); "
    "HAProxy answers the malformed ones 400",
    {501}};
const VerdictDifference kAuthorityWins{
    "an absolute-form target's authority replaces a Host that differs, as RFC 9112 §3.2.2 "
    "tells a recipient (and httpd's corpus expects); HAProxy refuses the mismatch",
    {200}};
const VerdictDifference kEmptyHost{
    "\"http://:\" has no host: 400 (RFC 9110 §4.2.1, an http URI's host is not empty); HAProxy "
    "takes it",
    {400}};

TEST(RequestCorpus, HaproxyRegTestsAgreeOrDifferAsListed) {
  static const std::map<std::string, VerdictDifference, std::less<>> listed = {
      {"h1_host_normalization.vtc:272",
       {"userinfo in an absolute-form target: 400 (RFC 9110 §4.2.4); HAProxy drops it", {400}}},
      {"h1_host_normalization.vtc:328", kConnectAnyway},
      {"h1_host_normalization.vtc:342", kConnectAnyway},
      {"h1_host_normalization.vtc:356", kConnectAnyway},
      {"h1_host_normalization.vtc:370", kConnectAnyway},
      {"h1_host_normalization.vtc:383", kConnectAnyway},
      {"h1_host_normalization.vtc:396", kConnectAnyway},
      {"h1_host_normalization.vtc:410", kConnectAnyway},
      {"h1_host_normalization.vtc:424", kAuthorityWins},
      {"h1_host_normalization.vtc:438", kAuthorityWins},
      {"h1_host_normalization.vtc:452", kAuthorityWins},
      {"h1_host_normalization.vtc:466", kAuthorityWins},
      {"h1_host_normalization.vtc:510", kConnectAnyway},
      {"h1_host_normalization.vtc:524", kConnectAnyway},
      {"h1_host_normalization.vtc:538", kConnectAnyway},
      {"h1_host_normalization.vtc:552", kConnectAnyway},
      {"h1_host_normalization.vtc:580", kConnectAnyway},
      {"h1_host_normalization.vtc:766", kEmptyHost},
      {"h1_host_normalization.vtc:780", kEmptyHost},
      {"h1_host_normalization.vtc:794", kEmptyHost},
      {"h1_host_normalization.vtc:808", kEmptyHost},
      {"h1_request_target_validation.vtc:64", kConnectAnyway},
      {"h1_request_target_validation.vtc:72", kConnectAnyway},
      {"h1_to_h2_upgrade.vtc:70",
       {"the HTTP/2 connection preface starts HTTP/2 with prior knowledge (SPEC §7): no "
        "HTTP/1.1 answer, the connection ends with the client's side; HAProxy's HTTP/1 "
        "listener answers 405",
        {}}},
      {"http_request_buffer.vtc:120",
       {"HTTP/1.1 without Host, and two spaces in the request line: 400 (RFC 9112 §3.2, §3)",
        {400}}},
      {"http_transfer_encoding.vtc:101",
       {"Transfer-Encoding with Content-Length: 400, the whole message (RFC 9112 §6.1 lets a "
        "server reject it; a proxy that drops one of them trusts the sender's meaning); HAProxy "
        "drops Content-Length and forwards it",
        {400}}},
      {"http_transfer_encoding.vtc:112",
       {"Transfer-Encoding in HTTP/1.0: 400, its framing is faulty (RFC 9112 §6.1); HAProxy "
        "forwards it",
        {400}}},
      {"http_transfer_encoding.vtc:196",
       {"a transfer coding besides chunked: 501, as RFC 9112 §6.1 says a server SHOULD; HAProxy "
        "answers 422",
        {501}}},
      {"websocket.vtc:150",
       {"forwarded: a WebSocket handshake's own fields are the upstream's to check (RFC 6455 "
        "§4.2.1); HAProxy checks Sec-WebSocket-Key itself",
        {101}}},
      {"websocket.vtc:162",
       {"forwarded: a WebSocket handshake's own fields are the upstream's to check (RFC 6455 "
        "§4.2.1); HAProxy checks Sec-WebSocket-Key itself",
        {101}}},
  };
  int agreed = 0;
  EXPECT_EQ(verdict_disagreements("haproxy_requests.json", listed, agreed), "");
  std::cout << "HAProxy reg-tests: " << agreed << " agree, " << listed.size()
            << " differ as listed\n";
}

TEST(RequestCorpus, HttpdStrictRequestsAgreeOrDifferAsListed) {
  const VerdictDifference ipv4_spelling{
      "forwarded: a valid reg-name (RFC 3986 §3.2.2), which the proxy passes on and never "
      "connects to, so an odd IPv4 spelling reaches no other server; httpd refuses them",
      {200}};
  const VerdictDifference version{
      "a version other than HTTP/1.0 and 1.1: 400 (Beast reads those only); RFC 9110 §2.5 "
      "would read 1.2 as 1.1, and 2.0 is HTTP/2's preface on this port or a 505",
      {400}};
  static const std::map<std::string, VerdictDifference, std::less<>> listed = {
      {"http_strict.t:24",
       {"forwarded: a method is any token, case-sensitive (RFC 9110 §9.1); the origin answers "
        "one it does not know (httpd's 501)",
        {200}}},
      {"http_strict.t:35", version},
      {"http_strict.t:36", version},
      {"http_strict.t:66", ipv4_spelling},
      {"http_strict.t:67", ipv4_spelling},
      {"http_strict.t:69", ipv4_spelling},
      {"http_strict.t:70", ipv4_spelling},
  };
  int agreed = 0;
  EXPECT_EQ(verdict_disagreements("httpd_strict_requests.json", listed, agreed), "");
  std::cout << "httpd http_strict.t: " << agreed << " agree, " << listed.size()
            << " differ as listed\n";
}

}  // namespace
}  // namespace sluice::test
