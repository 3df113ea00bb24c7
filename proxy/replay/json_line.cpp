// The JSON lines of SPEC §6, read with Boost.JSON's SAX parser: each member goes straight into the
// record, with no DOM and no allocation beyond the record's reused scratch buffer.
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <functional>

#include "proxy/replay/replay_record.hpp"

namespace sluice::replay {
namespace {

namespace json = boost::json;

/// The members a line may have; any other is skipped, whatever its value.
enum class Field {
  t,
  duration,
  cost,
  response_cost,
  status,
  ip,
  method,
  path,
  host,
  headers,
  other
};

Field field_named(std::string_view name) {
  static constexpr std::pair<std::string_view, Field> kFields[] = {
      {"t", Field::t},
      {"duration", Field::duration},
      {"cost", Field::cost},
      {"ip", Field::ip},
      {"method", Field::method},
      {"path", Field::path},
      {"host", Field::host},
      {"headers", Field::headers},
      {"response_cost", Field::response_cost},
      {"status", Field::status}};
  for (const auto& [known, field] : kFields) {
    if (name == known) {
      return field;
    }
  }
  return Field::other;
}

/// What a member must hold, for the message when it holds something else.
const char* expected_of(Field field) {
  switch (field) {
    case Field::t:
      return "t must be a non-negative number";
    case Field::duration:
      return "duration must be a non-negative number";
    case Field::cost:
      return "cost must be a whole number of at least 1";
    case Field::response_cost:
      return "response_cost must be a whole number from 0 to 4294967295";
    case Field::status:
      return "status must be a whole number from 100 to 599";
    case Field::headers:
      return "headers must be an object";
    default:
      return "expected a string";
  }
}

/// Takes the parser's events for one line and fills the record. A member whose value does not
/// fit stops the parse, with `problem()` saying why and where.
class RecordReader {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  RecordReader(std::string_view line, ReplayRecord& record) : line_(line), record_(record) {}

  const std::optional<std::string>& problem() const noexcept { return problem_; }
  bool has_t() const noexcept { return has_t_; }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }

  bool on_object_begin(json::error_code& ec) {
    const bool opens_line = depth_ == 0;  // the line's own object (checked before parsing)
    if (at_member_value() && field_ == Field::headers) {
      in_headers_ = true;
    } else if (!opens_line && !skipping()) {
      return wrong_value(ec);
    }
    ++depth_;
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    leave();
    return true;
  }
  bool on_array_begin(json::error_code& ec) {
    if (!skipping()) {
      return wrong_value(ec);
    }
    ++depth_;
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) {
    leave();
    return true;
  }

  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    if (depth_ == 1 || at_header_value()) {
      collect(part);
    }
    return true;
  }
  bool on_key(json::string_view last, std::size_t, json::error_code&) {
    if (depth_ == 1) {
      field_ = field_named(collected(last));
    } else if (at_header_value()) {
      header_name_ = collected(last);
    } else {
      return true;
    }
    // The name's last part is a view of the line when it ends unescaped: its end is the closing
    // quote, from which a problem with the value can point at the value.
    name_end_ = in_line(last) ? static_cast<std::size_t>(last.data() + last.size() - line_.data())
                              : std::string_view::npos;
    return true;
  }

  bool on_string_part(json::string_view part, std::size_t, json::error_code& ec) {
    if (wants_string()) {
      collect(part);
      return true;
    }
    return skipping() || wrong_value(ec);
  }
  bool on_string(json::string_view last, std::size_t, json::error_code& ec) {
    if (!wants_string()) {
      return skipping() || wrong_value(ec);
    }
    const std::string_view text = collected(last);
    if (at_header_value()) {
      if (record_.header_count == ReplayRecord::kMaxHeaders) {
        return fail(ec, "more than 64 headers");
      }
      record_.headers[record_.header_count++] = {header_name_, text};
      return true;
    }
    (field_ == Field::ip       ? record_.ip
     : field_ == Field::method ? record_.method
     : field_ == Field::path   ? record_.path
                               : record_.host) = text;
    return true;
  }

  // Numbers are read again from their text: the parser's own conversion may be an ulp off, and
  // `t` must read back as written.
  bool on_number_part(json::string_view, json::error_code& ec) {
    return fail(ec, "a number split in parts");  // never: the whole line is parsed at once
  }
  bool on_int64(std::int64_t, json::string_view text, json::error_code& ec) {
    return number(text, ec);
  }
  bool on_uint64(std::uint64_t, json::string_view text, json::error_code& ec) {
    return number(text, ec);
  }
  bool on_double(double, json::string_view text, json::error_code& ec) { return number(text, ec); }
  bool on_bool(bool, json::error_code& ec) { return skipping() || wrong_value(ec); }
  bool on_null(json::error_code& ec) { return skipping() || wrong_value(ec); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  /// At the value of a member of the line's object.
  bool at_member_value() const noexcept { return depth_ == 1; }
  /// Within the `headers` object.
  bool at_header_value() const noexcept { return depth_ == 2 && in_headers_; }
  /// Within a member the record has no place for, where any value goes.
  bool skipping() const noexcept {
    return (at_member_value() && field_ == Field::other) || (depth_ > 1 && !at_header_value());
  }
  bool wants_string() const noexcept {
    return at_header_value() ||
           (at_member_value() && (field_ == Field::ip || field_ == Field::method ||
                                  field_ == Field::path || field_ == Field::host));
  }
  void leave() noexcept {
    if (--depth_ == 1) {
      in_headers_ = false;
    }
  }

  /// Whether `text` is a view of the line itself (not of the parser's buffer for unescaped text).
  bool in_line(json::string_view text) const noexcept {
    const std::less_equal<const char*> not_after;
    return not_after(line_.data(), text.data()) &&
           not_after(text.data() + text.size(), line_.data() + line_.size());
  }

  /// Adds part of a string to the scratch buffer; `collected` gives the whole string.
  void collect(json::string_view part) {
    if (string_start_ == std::string::npos) {
      string_start_ = record_.scratch.size();
    }
    record_.scratch.append(part.data(), part.size());
  }
  std::string_view collected(json::string_view last) {
    if (string_start_ == std::string::npos && in_line(last)) {
      return last;  // the whole string, as the line has it: no copy
    }
    collect(last);
    const std::string_view text = std::string_view(record_.scratch).substr(string_start_);
    string_start_ = std::string::npos;
    return text;
  }

  bool number(json::string_view text, json::error_code& ec) {
    if (skipping()) {
      return true;
    }
    if (at_header_value()) {
      return wrong_value(ec);
    }
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool finite = error == std::errc{} && end == text.data() + text.size();
    switch (field_) {
      case Field::t:
      case Field::duration:
        if (!finite || value < 0) {
          return wrong_value(ec);
        }
        if (value > kMaxSeconds) {
          return fail(ec, std::string(field_ == Field::t ? "t" : "duration") +
                              " must be at most 9223372036 (the limiter clock ends in 2262)");
        }
        (field_ == Field::t ? record_.t : record_.duration) = value;
        has_t_ = has_t_ || field_ == Field::t;
        return true;
      case Field::cost:
        if (!finite || value < 1 || value > 4294967295.0 || std::floor(value) != value) {
          return wrong_value(ec);
        }
        record_.cost = static_cast<limiter::Permits>(value);
        return true;
      case Field::response_cost:
        if (!finite || value < 0 || value > 4294967295.0 || std::floor(value) != value) {
          return wrong_value(ec);
        }
        record_.response_cost = static_cast<limiter::Permits>(value);
        return true;
      case Field::status:
        if (!finite || value < 100 || value > 599 || std::floor(value) != value) {
          return wrong_value(ec);
        }
        record_.status = static_cast<unsigned>(value);
        return true;
      default:
        return wrong_value(ec);
    }
  }

  /// The value at hand does not fit its member.
  bool wrong_value(json::error_code& ec) {
    return fail(ec, at_header_value() ? "header values must be strings" : expected_of(field_));
  }
  bool fail(json::error_code& ec, std::string message) {
    if (name_end_ != std::string_view::npos) {
      // After the name's closing quote: blanks, the colon, blanks.
      const std::size_t value = line_.find_first_not_of(" \t\r\n:", name_end_ + 1);
      if (value != std::string_view::npos) {
        message += " at column " + std::to_string(value + 1);
      }
    }
    problem_ = std::move(message);
    ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    return false;
  }

  std::string_view line_;
  ReplayRecord& record_;
  std::size_t depth_ = 0;  ///< Objects and arrays open: 1 within the line's object.
  Field field_ = Field::other;
  bool in_headers_ = false;
  std::string_view header_name_;
  std::size_t string_start_ = std::string::npos;   ///< Of the string being collected.
  std::size_t name_end_ = std::string_view::npos;  ///< The last member name's closing quote.
  std::optional<std::string> problem_;
  bool has_t_ = false;
};

}  // namespace

std::optional<std::string> parse_json_line(std::string_view line, ReplayRecord& record) {
  record.reset(line.size());
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos || line[start] != '{') {
    return "not a JSON object";
  }
  json::parse_options options;
  options.allow_invalid_utf8 = true;  // logs carry what clients sent, as the proxy took it
  json::basic_parser<RecordReader> parser(options, line, record);
  json::error_code error;
  const std::size_t parsed = parser.write_some(false, line.data(), line.size(), error);
  if (const std::optional<std::string>& problem = parser.handler().problem()) {
    return *problem;
  }
  if (error) {
    return "invalid JSON: " + error.message() + " at column " + std::to_string(parsed + 1);
  }
  if (parsed != line.size()) {
    return "unexpected text after the object at column " + std::to_string(parsed + 1);
  }
  if (!parser.handler().has_t()) {
    return "missing \"t\" (seconds since the Unix epoch)";
  }
  return std::nullopt;
}

}  // namespace sluice::replay
