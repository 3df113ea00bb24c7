#include "proxy/auth/claims.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace sluice::auth {
namespace {

std::string claim_text(const boost::json::object& claims, std::string_view path) {
  const boost::json::value* claim = find_claim(claims, path);
  std::string text = "kept|";
  if (claim == nullptr) {
    return "(none)";
  }
  return append_claim_text(*claim, text) ? text : "(not text)";
}

TEST(Claims, FindsDottedPathsAndNamesThatHoldDots) {
  const boost::json::object claims = boost::json::parse(R"({
    "sub": "alice", "org": {"id": "acme", "size": 12, "nested": {"deep": true}},
    "https://idp.test/plan": "pro", "https://idp.test/org": {"id": 7},
    "ratio": 0.5, "big": 18446744073709551615, "negative": -3,
    "roles": ["a", "b"], "none": null, "org.id": "flat wins"})")
                                         .as_object();
  EXPECT_EQ(claim_text(claims, "sub"), "kept|alice");
  // A member named with the whole path is found first: the issuer wrote it so.
  EXPECT_EQ(claim_text(claims, "org.id"), "kept|flat wins");
  EXPECT_EQ(claim_text(claims, "org.size"), "kept|12");
  EXPECT_EQ(claim_text(claims, "org.nested.deep"), "kept|true");
  EXPECT_EQ(claim_text(claims, "https://idp.test/plan"), "kept|pro");
  EXPECT_EQ(claim_text(claims, "https://idp.test/org.id"), "kept|7");
  EXPECT_EQ(claim_text(claims, "ratio"), "kept|0.5");
  EXPECT_EQ(claim_text(claims, "big"), "kept|18446744073709551615");
  EXPECT_EQ(claim_text(claims, "negative"), "kept|-3");
  EXPECT_EQ(claim_text(claims, "roles"), "(not text)");
  EXPECT_EQ(claim_text(claims, "none"), "(not text)");
  EXPECT_EQ(claim_text(claims, "org"), "(not text)");
  EXPECT_EQ(claim_text(claims, "org.missing"), "(none)");
  EXPECT_EQ(claim_text(claims, "sub.x"), "(none)");
  EXPECT_EQ(claim_text(claims, "missing"), "(none)");
}

}  // namespace
}  // namespace sluice::auth
