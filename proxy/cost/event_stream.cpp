#include "proxy/cost/event_stream.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::cost {
namespace {

bool ends_line(char c) { return c == '\n' || c == '\r'; }

/// Where the line that `from` is in ends in `piece`, or the piece's end.
std::size_t line_end(std::span<const char> piece, std::size_t from) {
  return from + first_line_end({piece.data() + from, piece.size() - from});
}

}  // namespace

std::size_t first_line_end(std::string_view text) {
  // Values are most of a stream's bytes: a vectorized search for each ending beats one loop over
  // both, and a window at a time keeps lines that end in \r from each searching far for a \n.
  constexpr std::size_t kWindow = 256;
  for (std::size_t from = 0; from < text.size(); from += kWindow) {
    const std::string_view window = text.substr(from, kWindow);
    std::size_t size = window.size();
    if (const void* lf = std::memchr(window.data(), '\n', size)) {
      size = static_cast<std::size_t>(static_cast<const char*>(lf) - window.data());
    }
    if (const void* cr = std::memchr(window.data(), '\r', size)) {
      size = static_cast<std::size_t>(static_cast<const char*>(cr) - window.data());
    }
    if (size < window.size()) {
      return from + size;
    }
  }
  return text.size();
}

void EventStreamReader::start() { *this = EventStreamReader(); }

bool EventStreamReader::name_is_data() const {
  const std::string_view name(name_.data(), name_length_);
  return !name_too_long_ && (name == "data" || (first_line_ && name == "\xEF\xBB\xBF"
                                                                       "data"));
}

void EventStreamReader::end_line(EventStreamSink& sink) {
  if (line_ == Line::start) {
    sink.event_end();
  } else if (line_ == Line::name && name_is_data()) {
    (void)sink.data_line({});  // "data" alone: a data line with an empty value
  }
  line_ = Line::start;
  first_line_ = false;
}

/// The data field whose colon is at `colon` starts: where to go on from.
std::size_t EventStreamReader::data_field(std::span<const char> piece, std::size_t colon,
                                          EventStreamSink& sink) {
  const std::size_t next = colon + 1;
  const std::size_t taken =
      sink.data_line(std::string_view(piece.data() + next, piece.size() - next));
  if (taken == 0) {
    line_ = Line::space;
  } else if (piece[next + taken - 1] == '\n') {
    line_ = Line::start;  // the sink saw the event through its blank line
  } else {
    line_ = Line::value;  // the sink saw the line to the piece's end, its space with it
  }
  return next + taken;
}

void EventStreamReader::write(std::span<const char> piece, EventStreamSink& sink) {
  std::size_t at = 0;
  while (at < piece.size()) {
    const char c = piece[at];
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') {
        ++at;
        continue;
      }
    }
    if (ends_line(c)) {
      end_line(sink);
      after_cr_ = c == '\r';
      ++at;
      continue;
    }
    switch (line_) {
      case Line::start:
        // Most lines of a stream are data: its name is not taken a byte at a time.
        if (piece.size() - at >= 5 && std::memcmp(piece.data() + at, "data:", 5) == 0) {
          first_line_ = false;
          at = data_field(piece, at + 4, sink);
          continue;
        }
        if (c != 'd' && !first_line_) {
          line_ = Line::skip;  // no data field (nor one with a byte order mark, past the first)
          continue;
        }
        name_length_ = 0;
        name_too_long_ = false;
        line_ = c == ':' ? Line::skip : Line::name;
        continue;  // the same byte again, as a name's first or a comment's
      case Line::name:
        if (c == ':') {
          if (name_is_data()) {
            at = data_field(piece, at, sink);
            continue;
          }
          line_ = Line::skip;
        } else if (name_length_ < name_.size()) {
          name_[name_length_++] = c;
        } else {
          name_too_long_ = true;
        }
        ++at;
        continue;
      case Line::space:
        line_ = Line::value;
        if (c == ' ') {
          ++at;
        }
        continue;
      case Line::value: {
        const std::size_t end = line_end(piece, at);
        sink.data(std::string_view(piece.data() + at, end - at));
        at = end;
        continue;
      }
      case Line::skip:
        at = line_end(piece, at);
        continue;
    }
  }
}

}  // namespace sluice::cost
