// The small parsers config/ is built from: CIDRs, addresses, keys, ${VAR}, "did you mean".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/addresses.hpp"
#include "config/cidr.hpp"
#include "config/did_you_mean.hpp"
#include "config/env_expand.hpp"
#include "config/read_limiters.hpp"
#include "config/route_overlap.hpp"

namespace sluice::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseCidr, ReadsIpv4AndIpv6NetworksAndClearsHostBits) {
  EXPECT_EQ(to_string(*parse_cidr("10.0.0.0/8")), "10.0.0.0/8");
  EXPECT_EQ(to_string(*parse_cidr("10.1.2.3/8")), "10.0.0.0/8");
  EXPECT_EQ(to_string(*parse_cidr("203.0.113.7")), "203.0.113.7/32");
  EXPECT_EQ(to_string(*parse_cidr("2001:db8::1/32")), "2001:db8::/32");
  EXPECT_EQ(to_string(*parse_cidr("::1")), "::1/128");
  EXPECT_FALSE(parse_cidr("2001:db8::1")->ipv4);
  for (const char* bad : {"", "10.0.0.0/33", "10.0.0/8", "::/129", "10.0.0.0/", "x/8",
                          "10.0.0.0/8x", "256.0.0.0/8"}) {
    EXPECT_FALSE(parse_cidr(bad).has_value()) << bad;
  }
}

TEST(ParseHostPort, ReadsIpv4Ipv6AndBarePorts) {
  EXPECT_EQ(parse_host_port("0.0.0.0:8080")->port, 8080);
  EXPECT_EQ(parse_host_port("[::]:8080")->host, "::");
  EXPECT_EQ(parse_host_port(":9901")->host, "0.0.0.0");
  EXPECT_EQ(parse_host_port("127.0.0.1:0")->port, 0);
  for (const char* bad : {"8080", "host:", "host:65536", "::1:80", "[::1]80", "h:8o"}) {
    EXPECT_FALSE(parse_host_port(bad).has_value()) << bad;
  }
}

TEST(ParseUpstream, AcceptsHttpsOnPort443ByDefault) {
  std::string problem;
  const std::optional<Upstream> secure = parse_upstream("https://api.internal", problem);
  ASSERT_TRUE(secure.has_value()) << problem;
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->port, 443);
  EXPECT_EQ(parse_upstream("HTTPS://api.internal:8443", problem)->port, 8443);
  EXPECT_FALSE(parse_upstream("http://api.internal", problem)->tls);
}

TEST(ParseUpstream, AcceptsPlainHttpHostAndPort) {
  std::string problem;
  EXPECT_EQ(parse_upstream("http://127.0.0.1:9000", problem)->port, 9000);
  EXPECT_EQ(parse_upstream("http://backend/", problem)->port, 80);
  EXPECT_EQ(parse_upstream("http://backend/", problem)->host, "backend");
  EXPECT_EQ(parse_upstream("http://[::1]:81", problem)->host, "::1");
  EXPECT_EQ(parse_upstream("HTTP://backend", problem)->url, "HTTP://backend");
  for (const char* bad :
       {"ftp://backend", "http://backend/api", "http://", "http:backend", "backend:80",
        "http://backend:", "http://backend:0", "http://backend:65536", "http://backend?x=1",
        "http://backend#top", "http://back end", "http://[::1", "http://[v1.x]:80"}) {
    EXPECT_FALSE(parse_upstream(bad, problem).has_value()) << bad;
  }
}

TEST(ParseUpstream, RefusesCredentialsWithoutShowingThem) {
  std::string problem;
  EXPECT_FALSE(parse_upstream("http://admin:hunter2@backend", problem).has_value());
  EXPECT_EQ(problem,
            "\"http://admin:***@backend\" must be http[s]://host[:port], without a user or "
            "password");
  EXPECT_FALSE(parse_upstream("http://admin:hunter2@back@end", problem).has_value());
  EXPECT_THAT(problem, Not(HasSubstr("hunter2")));
  EXPECT_FALSE(parse_upstream("http://backend:99999", problem).has_value());
  EXPECT_EQ(problem, "\"http://backend:99999\" has a port that is not a number from 1 to 65535");
}

TEST(ParseRedisUrl, ReadsCredentialsHostPortAndDatabase) {
  std::string problem;
  const auto full = parse_redis_url("redis://app:s3cr%40t@cache.internal:6380/3", problem);
  ASSERT_TRUE(full.has_value()) << problem;
  EXPECT_EQ(full->user, "app");
  EXPECT_EQ(full->password, "s3cr@t");
  EXPECT_EQ(full->host, "cache.internal");
  EXPECT_EQ(full->port, 6380);
  EXPECT_EQ(full->db, 3U);
  const auto plain = parse_redis_url("redis://127.0.0.1", problem);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->port, 6379);
  EXPECT_EQ(plain->db, 0U);
  EXPECT_TRUE(plain->password.empty());
  const auto password_only = parse_redis_url("redis://:pw@[::1]:7000/", problem);
  ASSERT_TRUE(password_only.has_value());
  EXPECT_EQ(password_only->user, "");
  EXPECT_EQ(password_only->password, "pw");
  EXPECT_EQ(password_only->host, "::1");
  EXPECT_EQ(parse_redis_url("REDIS://cache", problem)->host, "cache");
  for (const char* bad :
       {"http://127.0.0.1", "redis://", "redis://host:0", "redis://host/x", "redis://user@host",
        "redis://host/0/1", "redis://host/0?db=1", "redis://host:6379#0", "redis:host",
        "rediss://host", "redis://host:65536", "redis://host/1000001"}) {
    EXPECT_FALSE(parse_redis_url(bad, problem).has_value()) << bad;
  }
}

TEST(ParseRedisUrl, PercentDecodesTheUserAndPasswordAsRfc3986Says) {
  std::string problem;
  // A ':' in a password needs no escape (only the first one ends the user); '+' stays '+'.
  const auto endpoint =
      parse_redis_url("redis://us%3Aer%40x:p%40ss%2Fw:rd%25+%20@cache:6380/0", problem);
  ASSERT_TRUE(endpoint.has_value()) << problem;
  EXPECT_EQ(endpoint->user, "us:er@x");
  EXPECT_EQ(endpoint->password, "p@ss/w:rd%+ ");
  EXPECT_EQ(endpoint->host, "cache");
  EXPECT_EQ(endpoint->port, 6380);
}

TEST(ParseRedisUrl, APasswordWithARawAtSignEndsAtTheLastOne) {
  std::string problem;
  const auto endpoint = parse_redis_url("redis://app:s3cr@t@@cache:6380/3", problem);
  ASSERT_TRUE(endpoint.has_value()) << problem;
  EXPECT_EQ(endpoint->user, "app");
  EXPECT_EQ(endpoint->password, "s3cr@t@");
  EXPECT_EQ(endpoint->host, "cache");
  EXPECT_EQ(endpoint->port, 6380);
  EXPECT_EQ(endpoint->db, 3U);
  // Mixed with an encoded one, as `${VAR}` inside an encoded URL gives.
  EXPECT_EQ(parse_redis_url("redis://:a%40b@c@cache", problem)->password, "a@b@c");
}

TEST(ParseRedisUrl, AsksToPercentEncodeReservedCharactersWithoutShowingThePassword) {
  std::string problem;
  const std::string invalid =
      "is not a valid URL (RFC 3986); percent-encode / ? # % in the user and password as %2F %3F "
      "%23 %25 (redis://[[user]:password@]host[:port][/db])";
  EXPECT_FALSE(parse_redis_url("redis://:100%sure@cache", problem).has_value());
  EXPECT_EQ(problem, "\"redis://***@cache\" " + invalid);
  for (const char* password : {"pa/ss", "pa?ss", "pa#ss", "12/34", "a@b/c:d%e"}) {
    EXPECT_FALSE(
        parse_redis_url(std::string("redis://app:") + password + "@cache/0", problem).has_value())
        << password;
    EXPECT_THAT(problem, Not(HasSubstr(password)));
    EXPECT_THAT(problem, HasSubstr("percent-encode")) << password;
  }
}

TEST(ParseKey, RefusesUnknownPartsAndEmptyNames) {
  std::string problem;
  EXPECT_TRUE(parse_key("bearer", problem).has_value());
  EXPECT_TRUE(parse_key("cookie:session+route", problem).has_value());
  for (const char* bad : {"", "ip+", "header:", "header", "cookies:a", "ip++route"}) {
    EXPECT_FALSE(parse_key(bad, problem).has_value()) << bad;
  }
}

TEST(ExpandEnvironment, ExpandsSetVariablesAndDefaults) {
  const Environment environment = [](std::string_view name) -> std::optional<std::string> {
    if (name == "HOST") {
      return "backend";
    }
    if (name == "EMPTY") {
      return "";
    }
    return std::nullopt;
  };
  std::string problem;
  EXPECT_EQ(expand_environment("http://${HOST}:${PORT:-9000}", environment, problem),
            "http://backend:9000");
  EXPECT_EQ(expand_environment("${EMPTY:-fallback}", environment, problem), "fallback");
  EXPECT_EQ(expand_environment("${EMPTY}", environment, problem), "");
  EXPECT_EQ(expand_environment("cost $5 and $$", environment, problem), "cost $5 and $");
  EXPECT_FALSE(expand_environment("${MISSING}", environment, problem).has_value());
  EXPECT_EQ(problem,
            "environment variable MISSING is not set (give a default with ${MISSING:-value})");
  EXPECT_FALSE(expand_environment("${HOST", environment, problem).has_value());
  EXPECT_FALSE(expand_environment("${}", environment, problem).has_value());
}

TEST(ClosestWord, SuggestsOnlyLikelyTypos) {
  const std::vector<std::string_view> keys{"listen", "limiters", "routes", "ban"};
  EXPECT_EQ(closest_word("listn", keys), "listen");
  EXPECT_EQ(closest_word("limters", keys), "limiters");
  EXPECT_EQ(closest_word("rotues", keys), "routes");  // a swap counts once
  EXPECT_EQ(closest_word("bna", keys), "ban");
  EXPECT_FALSE(closest_word("upstream", keys).has_value());
  EXPECT_FALSE(closest_word("xyz", keys).has_value());
}

RouteMatch match_of(RouteMatch::Path kind, std::string path,
                    std::vector<std::string> methods = {}) {
  RouteMatch match;
  match.path_kind = kind;
  match.path = std::move(path);
  match.methods = std::move(methods);
  return match;
}

TEST(Covers, FindsRoutesThatCanNeverMatch) {
  using Path = RouteMatch::Path;
  EXPECT_TRUE(covers(match_of(Path::any, ""), match_of(Path::exact, "/a")));
  EXPECT_TRUE(covers(match_of(Path::prefix, "/api/"), match_of(Path::prefix, "/api/v2/")));
  EXPECT_TRUE(covers(match_of(Path::prefix, "/api/"), match_of(Path::exact, "/api/x", {"GET"})));
  EXPECT_FALSE(covers(match_of(Path::prefix, "/api/v2/"), match_of(Path::prefix, "/api/")));
  EXPECT_FALSE(covers(match_of(Path::prefix, "/api/", {"GET"}), match_of(Path::exact, "/api/x")));
  EXPECT_TRUE(covers(match_of(Path::prefix, "/api/", {"GET", "POST"}),
                     match_of(Path::exact, "/api/x", {"POST"})));
  EXPECT_FALSE(covers(match_of(Path::regex, "^/a"), match_of(Path::exact, "/a")));
  EXPECT_TRUE(covers(match_of(Path::regex, "^/a"), match_of(Path::regex, "^/a")));

  RouteMatch gold = match_of(Path::any, "");
  gold.headers.push_back({.name = "X-Tier", .value = "gold", .present = true});
  RouteMatch gold_login = match_of(Path::exact, "/login");
  gold_login.headers.push_back({.name = "x-tier", .value = "gold", .present = true});
  gold_login.host = "api.example.com";
  EXPECT_TRUE(covers(gold, gold_login));
  EXPECT_FALSE(covers(gold_login, gold));
  RouteMatch silver = gold_login;
  silver.headers[0].value = "silver";
  EXPECT_FALSE(covers(gold, silver));
}

}  // namespace
}  // namespace sluice::config
