#pragma once

// A body source of a test's own: the pieces it gives, at once or after a wait, and what was
// given back (the body loop's and the request rewriter's tests).
#include <deque>
#include <string>
#include <vector>

#include "proxy/http/body.hpp"

namespace sluice::test {

/// One piece a ScriptedSource gives: there at once, or only after a wait.
struct Step {
  std::string bytes;
  bool last = false;
  bool at_once = true;
  boost::beast::error_code error{};
};

/// Gives its steps in order, the waiting ones from next(); records what was given back.
class ScriptedSource final : public sluice::http::BodySource {
 public:
  explicit ScriptedSource(std::deque<Step> steps) : steps_(std::move(steps)) {}

  bool next_now(sluice::http::BodyPiece& piece, boost::beast::error_code& ec) override {
    if (steps_.empty() || !steps_.front().at_once) {
      return false;
    }
    give(piece, ec);
    return true;
  }
  io::Awaitable<boost::beast::error_code> next(sluice::http::BodyPiece& piece) override {
    ++waits;
    boost::beast::error_code ec;
    give(piece, ec);
    co_return ec;
  }
  void taken(std::size_t count) noexcept override { given_back.push_back(count); }

  int waits = 0;
  std::vector<std::size_t> given_back;

 private:
  void give(sluice::http::BodyPiece& piece, boost::beast::error_code& ec) {
    current_ = std::move(steps_.front());
    steps_.pop_front();
    ec = current_.error;
    piece = sluice::http::BodyPiece{.bytes = current_.bytes, .last = current_.last};
  }

  std::deque<Step> steps_;
  Step current_;
};

}  // namespace sluice::test
