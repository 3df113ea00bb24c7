// Bytes from a Redis server (or whatever answers on its address) through the store's RESP reader
// (hiredis's parser behind RespReader), as a connection feeds it what each read returns. Each
// input is read twice, all at once and in small pieces with the replies taken after each: both
// must give the same replies, and the same protocol error if any (a std::runtime_error, the
// reader's only failure). Each array reply is also read as the decision script's answer for as
// many charges as it could hold (what the Redis store makes of a reply). Then the input, split
// into arguments at newlines, must come back from the command writer as one array of those bulk
// strings.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/pipeline/pipeline.hpp"
#include "proxy/store/redis/redis_decision.hpp"
#include "proxy/store/redis/resp.hpp"

namespace {

// Project symbols (one place to re-qualify them).
using sluice::limiter::Duration;
using sluice::limiter::kMaxChargesPerRequest;
using sluice::pipeline::ChargeResult;
using sluice::pipeline::Charges;
using sluice::store::redis::append_command;
using sluice::store::redis::DecisionReply;
using sluice::store::redis::failure_of;
using sluice::store::redis::read_decision;
using sluice::store::redis::RespReader;
using sluice::store::redis::RespValue;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "resp_fuzz: %s\n", what);
    std::abort();
  }
}

bool same(const RespValue& a, const RespValue& b) {
  return a.kind == b.kind && a.text == b.text && a.integer == b.integer &&
         std::equal(a.elements.begin(), a.elements.end(), b.elements.begin(), b.elements.end(),
                    same);
}

/// What a reading gave: the replies, then whether it ended in a protocol error.
struct Reading {
  std::vector<RespValue> replies;
  bool failed = false;
};

/// Feeds `bytes` in pieces of `piece` bytes (0: all at once), taking every whole reply after
/// each piece, as a connection does after each read.
Reading read(std::string_view bytes, std::size_t piece) {
  Reading reading;
  RespReader reader;
  try {
    do {
      const std::size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size());
      reader.feed(bytes.substr(0, n));
      bytes.remove_prefix(n);
      while (const RespValue* reply = reader.next()) {
        reading.replies.push_back(*reply);
      }
    } while (!bytes.empty());
  } catch (const std::runtime_error&) {
    reading.failed = true;
  }
  return reading;
}

/// `reply` as decide.lua's answer for requests of one to four charges (the last charge a shadow
/// one), read request by request as a batch is. Any reply must be read without harm; what is
/// read must make sense.
void read_as_decision(const RespValue& reply) {
  std::size_t at = 0;
  for (std::size_t request = 0; request < 64; ++request) {
    Charges charges;
    charges.count = 1 + request % 4;
    charges.live = charges.count > 1 ? charges.count - 1 : charges.count;
    ChargeResult result;
    const std::size_t before = at;
    const DecisionReply read = read_decision(reply, at, charges, result);
    if (read == DecisionReply::malformed) {
      require(at == before, "a malformed part moved the reading on");
      return;
    }
    require(at == before + 1 + 5 * charges.count, "a part read to the wrong length");
    if (read == DecisionReply::failed) {
      continue;
    }
    for (std::size_t i = 0; i < charges.count; ++i) {
      require(result.outcomes[i].verdict.hold >= Duration::zero() &&
                  result.outcomes[i].verdict.retry_after >= Duration::zero() &&
                  result.outcomes[i].status.reset >= Duration::zero(),
              "a negative duration from a decision reply");
    }
  }
  static_cast<void>(failure_of(reply, at));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const Reading whole = read(bytes, 0);
  const Reading pieces = read(bytes, 1 + size % 7);
  require(whole.failed == pieces.failed &&
              std::equal(whole.replies.begin(), whole.replies.end(), pieces.replies.begin(),
                         pieces.replies.end(), same),
          "replies read differently in other pieces");
  for (const RespValue& reply : whole.replies) {
    read_as_decision(reply);
  }

  std::vector<std::string_view> arguments;
  for (std::string_view rest = bytes; arguments.size() < 64;) {
    const std::size_t newline = std::min(rest.find('\n'), rest.size());
    arguments.push_back(rest.substr(0, newline));
    if (newline == rest.size()) {
      break;
    }
    rest.remove_prefix(newline + 1);
  }
  std::string command;
  append_command(command, arguments);
  const Reading written = read(command, 0);
  require(!written.failed && written.replies.size() == 1, "a command is not one reply");
  const RespValue& array = written.replies.front();
  require(array.kind == RespValue::Kind::array && array.elements.size() == arguments.size(),
          "a command is not an array of its arguments");
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    require(
        array.elements[i].kind == RespValue::Kind::bulk && array.elements[i].text == arguments[i],
        "a command's argument reads back as something else");
  }
  return 0;
}
