#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace sluice::test {

/// What tests/support/mint_jwt.py (PyJWT) printed for a verification time: a fresh key and a
/// token per algorithm, and the tokens of the refusal cases.
struct MintedJwts {
  struct Signed {
    std::string kid, public_pem, secret, token;  ///< `secret`: raw bytes, for HS*
    boost::json::object jwk;
  };
  std::map<std::string, Signed> by_algorithm;
  std::map<std::string, std::pair<std::string, std::string>> cases;  ///< name -> (key alg, token)
};

/// Runs the minting script once for `now` (seconds since the epoch); empty if it failed.
MintedJwts mint_jwts(std::int64_t now);
/// The same for the system clock's now: tokens a running proxy accepts for the next hour.
MintedJwts mint_jwts_now();

}  // namespace sluice::test
