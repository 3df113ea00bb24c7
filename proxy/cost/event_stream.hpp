#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace sluice::cost {

/// Where the first line of `text` ends: at its first \n or \r, else its size.
std::size_t first_line_end(std::string_view text);

/// What an event stream's lines say, in order.
class EventStreamSink {
 public:
  /// A `data` line starts; its value follows through data(), in runs. `ahead` is the rest of the
  /// piece from just past the field's colon (empty for a bare `data` line): a look at what comes
  /// without holding it. The sink may take bytes of `ahead` as seen, and returns how many it took:
  /// none; the line's value with its \n and the blank line's \n, when they end the event (the
  /// reader passes no data() and no event_end() for them); or, when the line runs past the piece,
  /// all of `ahead` (no data() for it: the line's value goes on in the next piece).
  virtual std::size_t data_line(std::string_view ahead) = 0;
  /// A run of the current data line's value (its one leading space dropped).
  virtual void data(std::string_view run) = 0;
  /// A blank line: the event the data lines since the last one make is complete.
  virtual void event_end() = 0;

 protected:
  ~EventStreamSink() = default;
};

/// The lines of a `text/event-stream` body (the HTML Living Standard's server-sent events) as
/// they stream: lines end in \n, \r\n or \r, even across pieces; `:` starts a comment; a field
/// is its name up to the first colon, its value after that colon and one optional space. Only
/// `data` and blank lines are passed on: `event`, `id`, `retry` and any other field are skipped.
/// A data value is never held: it goes out in runs of the piece it came in, so the reader's
/// memory is a field name's first bytes whatever the lines' lengths.
class EventStreamReader {
 public:
  /// A new stream.
  void start();
  /// The next piece of the stream.
  void write(std::span<const char> piece, EventStreamSink& sink);

 private:
  enum class Line : std::uint8_t {
    start,  ///< Nothing of the line yet.
    name,   ///< In a field's name.
    space,  ///< Just past a data field's colon: a space there is not the value's.
    value,  ///< In a data field's value.
    skip,   ///< In a comment or a field that is not data.
  };

  void end_line(EventStreamSink& sink);
  std::size_t data_field(std::span<const char> piece, std::size_t colon, EventStreamSink& sink);
  bool name_is_data() const;

  /// "data" (or anything as short) fits; a longer name is no field that matters.
  static constexpr std::size_t kNameRoom = 16;

  Line line_ = Line::start;
  bool after_cr_ = false;   ///< The last line ended in \r: a \n now is that ending's.
  bool first_line_ = true;  ///< A stream may start with a byte order mark.
  bool name_too_long_ = false;
  std::uint8_t name_length_ = 0;
  std::array<char, kNameRoom> name_{};
};

}  // namespace sluice::cost
