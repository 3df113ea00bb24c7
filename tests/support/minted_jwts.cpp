#include "tests/support/minted_jwts.hpp"

#include <array>
#include <boost/json/parse.hpp>
#include <chrono>
#include <cstdio>
#include <memory>

#include "proxy/auth/base64url.hpp"

namespace sluice::test {

MintedJwts mint_jwts(std::int64_t now) {
  MintedJwts read;
  const std::string command =
      "/usr/bin/python3 " SLUICE_SOURCE_DIR "/tests/support/mint_jwt.py " + std::to_string(now);
  const std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string line;
  std::array<char, 4096> bytes{};
  while (pipe && fgets(bytes.data(), bytes.size(), pipe.get()) != nullptr) {
    line += bytes.data();
    if (line.empty() || line.back() != '\n') {
      continue;  // a long line, in several reads
    }
    const boost::json::object entry = boost::json::parse(line).as_object();
    line.clear();
    auto text = [&](const char* name) {
      const boost::json::value* value = entry.if_contains(name);
      return value ? std::string(value->as_string()) : std::string();
    };
    if (entry.contains("case")) {
      read.cases[text("case")] = {text("key_alg"), text("token")};
      continue;
    }
    MintedJwts::Signed& one = read.by_algorithm[text("alg")];
    one.kid = text("kid");
    one.public_pem = text("public_pem");
    one.token = text("token");
    one.jwk = entry.at("jwk").as_object();
    auth::decode_base64url(text("secret"), one.secret);
  }
  return read;
}

MintedJwts mint_jwts_now() {
  return mint_jwts(std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
}

}  // namespace sluice::test
