#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "config/load_config.hpp"
#include "proxy/replay/replay_record.hpp"
#include "proxy/replay/replayer.hpp"
#include "proxy/replay/report_html.hpp"

namespace sluice::replay {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseJsonLine, ReadsEveryFieldAndUnescapesStrings) {
  ReplayRecord record;
  const auto problem = parse_json_line(
      R"({"t": 12.5, "ip": "1.2.3.4", "method": "POST", "path": "/a\"b?x=\u00e9", "host": "h",)"
      R"( "headers": {"X-Api-Key": "k\\1", "Cookie": "a=1"}, "cost": 3, "duration": 0.25,)"
      R"( "extra": {"nested": [1, 2, {"x": null}], "flag": true}})",
      record);
  ASSERT_FALSE(problem.has_value()) << *problem;
  EXPECT_EQ(record.t, 12.5);
  EXPECT_EQ(record.ip, "1.2.3.4");
  EXPECT_EQ(record.method, "POST");
  EXPECT_EQ(record.path, "/a\"b?x=\xc3\xa9");
  EXPECT_EQ(record.host, "h");
  ASSERT_EQ(record.header_count, 2U);
  EXPECT_EQ(record.headers[0].name, "X-Api-Key");
  EXPECT_EQ(record.headers[0].value, "k\\1");
  EXPECT_EQ(record.cost, 3U);
  EXPECT_EQ(record.duration, 0.25);
}

TEST(ParseJsonLine, DefaultsEveryFieldButT) {
  ReplayRecord record;
  ASSERT_FALSE(parse_json_line(R"({"t": 1})", record).has_value());
  EXPECT_EQ(record.ip, "0.0.0.0");
  EXPECT_EQ(record.method, "GET");
  EXPECT_EQ(record.path, "/");
  EXPECT_FALSE(record.cost.has_value());
}

TEST(ParseJsonLine, ExplainsWhatIsWrong) {
  ReplayRecord record;
  const std::pair<const char*, const char*> cases[] = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"ip": "1.2.3.4"})", "missing \"t\" (seconds since the Unix epoch)"},
      {R"({"t": -1})", "t must be a non-negative number at column 7"},
      {R"({"t": 1, "cost": 0})", "cost must be a whole number of at least 1 at column 18"},
      {R"({"t": 1, "cost": 1.5})", "cost must be a whole number of at least 1 at column 18"},
      {R"({"t": 1, "response_cost": -3})",
       "response_cost must be a whole number from 0 to 4294967295 at column 27"},
      {R"({"t": 1, "status": 99})", "status must be a whole number from 100 to 599 at column 20"},
      {R"({"t": 1, "ip": 5})", "expected a string at column 16"},
      {R"({"t": 1, "headers": {"a": 1}})", "header values must be strings at column 27"},
      {R"({"t": 1} trailing)", "unexpected text after the object at column 10"},
      {R"({"t": 1, "headers": []})", "headers must be an object at column 21"},
      {R"({"t": true})", "t must be a non-negative number at column 7"},
      {R"({"t": 1, "ip": "1.2.3.4", "duration": "2"})",
       "duration must be a non-negative number at column 39"},
      {R"({"\u0074": -1})", "t must be a non-negative number"},  // no column after an escaped name
      {R"({"t": 1, "path": "unterminated)", "invalid JSON: incomplete JSON at column 31"},
      {R"({"t": 1,, "ip": "1.2.3.4"})", "invalid JSON: syntax error at column 9"},
      {R"({"t": 1 "ip": "1.2.3.4"})", "invalid JSON: syntax error at column 9"},
      {R"({"t": 01})", "invalid JSON: syntax error at column 8"},
      {R"({"t": 1, "path": "/\ud83d"})", "invalid JSON: syntax error at column 26"},
      {R"({"t": 1, "path": "/\x"})", "invalid JSON: syntax error at column 21"},
      {R"({"t": 9223372036.5})",
       "t must be at most 9223372036 (the limiter clock ends in 2262) at column 7"},
      {R"({"t": 1, "duration": 1e300})",
       "duration must be at most 9223372036 (the limiter clock ends in 2262) at column 22"},
  };
  for (const auto& [line, message] : cases) {
    const auto problem = parse_json_line(line, record);
    ASSERT_TRUE(problem.has_value()) << line;
    EXPECT_EQ(*problem, message) << line;
  }
}

TEST(ParseJsonLine, DecodesSurrogatePairsAndEveryEscape) {
  ReplayRecord record;
  const auto problem = parse_json_line(
      R"({"t": 1, "path": "/\ud83d\ude00/\u00e9\u20ac", "method": "\u0050\u004FST",)"
      R"( "host": "a\/b\\c\"d\b\f\n\r\t",)"
      R"( "headers": {"X-\ud83d\ude00": "\uD83D\uDE00", "Plain": "p"}})",
      record);
  ASSERT_FALSE(problem.has_value()) << *problem;
  EXPECT_EQ(record.path, "/\xF0\x9F\x98\x80/\xC3\xA9\xE2\x82\xAC");  // U+1F600, U+00E9, U+20AC
  EXPECT_EQ(record.method, "POST");
  EXPECT_EQ(record.host, "a/b\\c\"d\b\f\n\r\t");
  ASSERT_EQ(record.header_count, 2U);
  EXPECT_EQ(record.headers[0].name, "X-\xF0\x9F\x98\x80");
  EXPECT_EQ(record.headers[0].value, "\xF0\x9F\x98\x80");
  EXPECT_EQ(record.headers[1].name, "Plain");
  EXPECT_EQ(record.headers[1].value, "p");
}

TEST(ParseJsonLine, KeepsBytesThatAreNotUtf8) {
  // Logs hold what clients sent: a raw byte in a path is the request's, not an error.
  ReplayRecord record;
  ASSERT_FALSE(parse_json_line("{\"t\": 1, \"path\": \"/a\xFF\xC3\"}", record).has_value());
  EXPECT_EQ(record.path, "/a\xFF\xC3");
}

TEST(ParseJsonLine, ReadsNumbersAsWritten) {
  // 19 significant digits: more than a double holds, so the nearest double must be found.
  ReplayRecord record;
  ASSERT_FALSE(
      parse_json_line(R"({"t": 1700006409.900931384, "duration": 2.5e-1})", record).has_value());
  EXPECT_EQ(record.t, 1700006409.900931384);
  EXPECT_EQ(record.duration, 0.25);
  ASSERT_FALSE(
      parse_json_line(R"({"t": 0.9058728226756229, "cost": 4294967295})", record).has_value());
  EXPECT_EQ(record.t, 0.9058728226756229);
  EXPECT_EQ(record.cost, 4294967295U);
}

TEST(ParseJsonLine, SkipsMembersItDoesNotKnowWhateverTheyHold) {
  ReplayRecord record;
  const auto problem =
      parse_json_line(R"({"extra": {"t": -5, "headers": [1, {"ip": null}], "cost": "x"}, "t": 3,)"
                      R"( "\u0069p": "10.0.0.1", "list": [[], {}, "s\u00e9", 1e999, true]})",
                      record);
  ASSERT_FALSE(problem.has_value()) << *problem;
  EXPECT_EQ(record.t, 3);
  EXPECT_EQ(record.ip, "10.0.0.1");  // an escaped name is still the name
  EXPECT_EQ(record.header_count, 0U);
}

TEST(ParseJsonLine, RefusesMoreHeadersThanARequestCarries) {
  std::string line = R"({"t": 1, "headers": {)";
  for (std::size_t i = 0; i <= ReplayRecord::kMaxHeaders; ++i) {
    line += (i == 0 ? "" : ", ") + ("\"h" + std::to_string(i) + "\": \"v\"");
  }
  line += "}}";
  ReplayRecord record;
  const auto problem = parse_json_line(line, record);
  ASSERT_TRUE(problem.has_value());
  EXPECT_THAT(*problem, ::testing::StartsWith("more than 64 headers"));
}

TEST(ParseCombinedLine, ReadsAddressTimeRequestAndAgent) {
  ReplayRecord record;
  const auto problem = parse_combined_line(
      R"log(203.0.113.9 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" )log"
      R"log(200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)")log",
      record);
  ASSERT_FALSE(problem.has_value()) << *problem;
  EXPECT_EQ(record.ip, "203.0.113.9");
  EXPECT_EQ(record.t, 971211336.0);  // 2000-10-10 20:55:36 UTC
  EXPECT_EQ(record.method, "GET");
  EXPECT_EQ(record.path, "/apache_pb.gif?x=1");
  ASSERT_EQ(record.header_count, 2U);
  EXPECT_EQ(record.headers[1].name, "User-Agent");
  EXPECT_EQ(record.headers[1].value, "Mozilla/4.08 [en] (Win98; I ;Nav)");
  // What the response said, for the charges settled after it (SPEC §9).
  EXPECT_EQ(record.status, 200U);
  EXPECT_EQ(record.response_bytes, 2326U);
  record.reset(0);
  ASSERT_FALSE(
      parse_combined_line(
          R"(1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "POST /login HTTP/1.1" 401 - "-" "-")",
          record)
          .has_value());
  EXPECT_EQ(record.status, 401U);
  EXPECT_FALSE(record.response_bytes.has_value());
}

TEST(ParseCombinedLine, RefusesOtherLines) {
  ReplayRecord record;
  EXPECT_TRUE(parse_combined_line("garbage", record).has_value());
  EXPECT_TRUE(
      parse_combined_line(
          R"(1.2.3.4 - - [32/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-")", record)
          .has_value());
  EXPECT_TRUE(
      parse_combined_line(R"(1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET" 200 1 "-" "-")", record)
          .has_value());
  // Only digits in the time's numbers (std::from_chars alone would take a sign).
  EXPECT_EQ(
      parse_combined_line(R"(1.2.3.4 - - [10/Oct/2000:-1:55:36 +0000] "GET / HTTP/1.1")", record),
      "the time is not [dd/Mon/yyyy:hh:mm:ss +zzzz]");
  EXPECT_EQ(
      parse_combined_line(R"(1.2.3.4 - - [10/Oct/2000:13:55:36 +-100] "GET / HTTP/1.1")", record),
      "the time is not [dd/Mon/yyyy:hh:mm:ss +zzzz]");
  // Times the limiter clock cannot hold (and `t` must not be negative, as in JSON lines).
  for (const char* line : {R"(1.2.3.4 - - [31/Dec/1969:23:59:59 +0000] "GET / HTTP/1.1")",
                           R"(1.2.3.4 - - [12/Apr/2262:00:00:00 +0000] "GET / HTTP/1.1")"}) {
    EXPECT_EQ(parse_combined_line(line, record),
              "the time is not between 1970 and 2262 (the limiter clock)")
        << line;
  }
  EXPECT_FALSE(
      parse_combined_line(R"(1.2.3.4 - - [01/Jan/1970:00:00:00 +0000] "GET / HTTP/1.1")", record)
          .has_value());
}

config::ProxyConfig one_route(const std::string& limiter) {
  return config::parse_config(
      "limiters:\n  l: " + limiter +
          "\nroutes: [{name: all, respond: {status: 200}, limiters: [l]}]\n",
      "proxy.yaml", [](std::string_view) { return std::nullopt; });
}

TEST(Replayer, TakesTimesAndDurationsUpToTheEndOfTheClock) {
  const config::ProxyConfig config = one_route("{algorithm: concurrency, limit: 1}");
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  replayer.feed(R"({"t": 0, "ip": "1.2.3.4"})", out);
  // Held for longer than the clock lasts: never given back.
  replayer.feed(R"({"t": 9223372036, "ip": "1.2.3.4", "duration": 9223372036})", out);
  replayer.feed(R"({"t": 9223372036, "ip": "1.2.3.4"})", out);
  EXPECT_EQ(replayer.requests(), 3U);
  EXPECT_THAT(out, HasSubstr(R"("t":9223372036,"route":"all","decision":"limited")"));
  std::ostringstream html;
  write_html_report(replayer.summary(), "proxy.yaml", "log", html);
  EXPECT_THAT(html.str(), HasSubstr("2262-04-11 23:47:16 UTC"));  // where the clock ends
}

TEST(Replayer, CountsMalformedLinesWithTheirNumbersAndCarriesOn) {
  const config::ProxyConfig config = one_route("{algorithm: fixed_window, limit: 100, window: 1m}");
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  replayer.feed(R"({"t": 1, "ip": "1.2.3.4"})", out);
  replayer.feed("not json", out);
  replayer.feed("", out);  // blank lines are skipped, not counted
  replayer.feed(R"({"t": 2, "ip": "not-an-ip"})", out);
  replayer.feed(R"({"t": 3, "ip": "1.2.3.4"})", out);
  EXPECT_EQ(replayer.requests(), 2U);
  EXPECT_EQ(replayer.summary().malformed_lines(), 2U);
  std::ostringstream summary;
  replayer.summary().print(summary);
  EXPECT_THAT(summary.str(), HasSubstr("line 2: not a JSON object"));
  EXPECT_THAT(summary.str(), HasSubstr("line 4: \"not-an-ip\" is not an IP address"));
}

TEST(Replayer, DecidesEarlierLinesAtTheLatestTimeSeen) {
  const config::ProxyConfig config = one_route("{algorithm: fixed_window, limit: 1, window: 10s}");
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  replayer.feed(R"({"t": 15, "ip": "1.2.3.4"})", out);
  replayer.feed(R"({"t": 5, "ip": "1.2.3.4"})", out);  // would be another window if believed
  EXPECT_EQ(replayer.out_of_order(), 1U);
  EXPECT_THAT(out, HasSubstr(R"("t":5,"route":"all","decision":"limited")"));
}

TEST(ReplaySummary, KeepsItsMemoryBoundedOnALongLog) {
  const config::ProxyConfig config = one_route("{algorithm: fixed_window, limit: 1, window: 1s}");
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  // A month of traffic, one request a minute, from ever new clients, many of them limited.
  for (int minute = 0; minute < 30 * 24 * 60; ++minute) {
    const std::string ip = "10." + std::to_string(minute / 65536 % 256) + "." +
                           std::to_string(minute / 256 % 256) + "." + std::to_string(minute % 256);
    const std::string t = std::to_string(minute * 60);
    replayer.feed(R"({"t": )" + t + R"(, "ip": ")" + ip + R"("})", out);
    replayer.feed(R"({"t": )" + t + R"(, "ip": ")" + ip + R"("})", out);
    replayer.feed(R"({"t": )" + t + R"(, "ip": "192.0.2.1"})", out);
    replayer.feed(R"({"t": )" + t + R"(, "ip": "192.0.2.1"})", out);
    out.clear();
  }
  const ReplaySummary& summary = replayer.summary();
  EXPECT_LE(summary.rows()[0].buckets.size(), ReplaySummary::kMaxBuckets);
  EXPECT_EQ(summary.rows()[0].totals.total(), 4U * 30 * 24 * 60);
  // 192.0.2.1 is limited once a minute, each new client once: it stays on top.
  const auto top = summary.top_keys(3);
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0].second, "l 192.0.2.1");
  EXPECT_GE(top[0].first, 30U * 24 * 60);
}

TEST(HtmlReport, IsOnePageThatFetchesNothing) {
  const config::ProxyConfig config = one_route("{algorithm: fixed_window, limit: 1, window: 1s}");
  Replayer replayer(config, InputFormat::jsonl);
  std::string out;
  for (int i = 0; i < 100; ++i) {
    replayer.feed(R"({"t": )" + std::to_string(i / 3) + R"(, "ip": "1.2.3.4"})", out);
  }
  std::ostringstream html;
  write_html_report(replayer.summary(), "proxy.yaml", "<log>", html);
  EXPECT_THAT(html.str(), HasSubstr("<svg"));
  EXPECT_THAT(html.str(), HasSubstr("&lt;log&gt;"));
  EXPECT_THAT(html.str(), HasSubstr("<td>l 1.2.3.4</td>"));
  EXPECT_THAT(html.str(), Not(HasSubstr("<script")));
  EXPECT_THAT(html.str(), Not(HasSubstr("http")));
}

}  // namespace
}  // namespace sluice::replay
