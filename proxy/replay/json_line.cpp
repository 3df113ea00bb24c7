// A parser for exactly the JSON objects of SPEC §6, fast enough for a million lines a second:
// no DOM, no allocation beyond the record's reused scratch buffer.
#include <charconv>
#include <cmath>
#include <cstdint>

#include "proxy/replay/replay_record.hpp"

namespace sluice::replay {
namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\r' || text_[at_] == '\n')) {
      ++at_;
    }
  }
  bool consume(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  bool done() {
    skip_space();
    return at_ == text_.size();
  }
  std::size_t position() const { return at_; }

  /// A JSON string, unescaped into `scratch` when it has escapes (else a view of the line).
  std::optional<std::string_view> string(std::string& scratch) {
    if (!consume('"')) {
      return std::nullopt;
    }
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != '"' && text_[at_] != '\\') {
      ++at_;
    }
    if (at_ < text_.size() && text_[at_] == '"') {
      return text_.substr(start, at_++ - start);
    }
    const std::size_t out = scratch.size();
    scratch.append(text_.substr(start, at_ - start));
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (c == '\\') {
        if (at_ == text_.size()) {
          return std::nullopt;
        }
        const char escape = text_[at_++];
        switch (escape) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case '"':
          case '\\':
          case '/':
            c = escape;
            break;
          case 'u': {
            unsigned code = 0;
            if (at_ + 4 > text_.size() ||
                std::from_chars(text_.data() + at_, text_.data() + at_ + 4, code, 16).ptr !=
                    text_.data() + at_ + 4) {
              return std::nullopt;
            }
            at_ += 4;
            append_utf8(code, scratch);
            continue;
          }
          default:
            return std::nullopt;
        }
      }
      scratch += c;
    }
    if (at_ == text_.size()) {
      return std::nullopt;
    }
    ++at_;
    return std::string_view(scratch).substr(out);
  }

  std::optional<double> number() {
    skip_space();
    double value = 0;
    const auto [end, error] =
        std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
    if (error != std::errc{} || !std::isfinite(value)) {
      return std::nullopt;
    }
    at_ = static_cast<std::size_t>(end - text_.data());
    return value;
  }

  /// Skips any JSON value (for fields we do not use).
  bool skip_value(std::string& scratch) {
    const char c = peek();
    if (c == '"') {
      const std::size_t mark = scratch.size();
      const bool ok = string(scratch).has_value();
      scratch.resize(mark);
      return ok;
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      if (consume(close)) {
        return true;
      }
      do {
        if (c == '{' && !(string(scratch) && consume(':'))) {
          return false;
        }
        if (!skip_value(scratch)) {
          return false;
        }
      } while (consume(','));
      return consume(close);
    }
    for (const std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return true;
      }
    }
    return number().has_value();
  }

 private:
  static void append_utf8(unsigned code, std::string& out) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

std::string at_column(const char* what, std::size_t position) {
  return std::string(what) + " at column " + std::to_string(position + 1);
}

std::string at_column(const char* what, const Cursor& cursor) {
  return at_column(what, cursor.position());
}

}  // namespace

std::optional<std::string> parse_json_line(std::string_view line, ReplayRecord& record) {
  record.reset(line.size());
  Cursor cursor(line);
  if (!cursor.consume('{')) {
    return "not a JSON object";
  }
  bool has_t = false;
  if (!cursor.consume('}')) {
    do {
      const std::optional<std::string_view> name = cursor.string(record.scratch);
      if (!name || !cursor.consume(':')) {
        return at_column("expected \"field\":", cursor);
      }
      cursor.skip_space();
      const std::size_t value_at = cursor.position();  // problems point at the value's start
      if (*name == "t" || *name == "duration") {
        const std::optional<double> value = cursor.number();
        if (!value || *value < 0) {
          return at_column(*name == "t" ? "t must be a non-negative number"
                                        : "duration must be a non-negative number",
                           value_at);
        }
        (*name == "t" ? record.t : record.duration) = *value;
        has_t = has_t || *name == "t";
      } else if (*name == "cost") {
        const std::optional<double> value = cursor.number();
        if (!value || *value < 1 || *value > 4294967295.0 || std::floor(*value) != *value) {
          return at_column("cost must be a whole number of at least 1", value_at);
        }
        record.cost = static_cast<limiter::Permits>(*value);
      } else if (*name == "ip" || *name == "method" || *name == "path" || *name == "host") {
        const std::optional<std::string_view> value = cursor.string(record.scratch);
        if (!value) {
          return at_column("expected a string", value_at);
        }
        (*name == "ip"       ? record.ip
         : *name == "method" ? record.method
         : *name == "path"   ? record.path
                             : record.host) = *value;
      } else if (*name == "headers") {
        if (!cursor.consume('{')) {
          return at_column("headers must be an object", value_at);
        }
        if (!cursor.consume('}')) {
          do {
            const std::optional<std::string_view> header = cursor.string(record.scratch);
            if (!header || !cursor.consume(':')) {
              return at_column("expected \"header\":", cursor);
            }
            const std::optional<std::string_view> value = cursor.string(record.scratch);
            if (!value) {
              return at_column("header values must be strings", cursor);
            }
            if (record.header_count == ReplayRecord::kMaxHeaders) {
              return "more than 64 headers";
            }
            record.headers[record.header_count++] = {*header, *value};
          } while (cursor.consume(','));
          if (!cursor.consume('}')) {
            return at_column("expected , or }", cursor);
          }
        }
      } else if (!cursor.skip_value(record.scratch)) {
        return at_column("not valid JSON", cursor);
      }
    } while (cursor.consume(','));
    if (!cursor.consume('}')) {
      return at_column("expected , or }", cursor);
    }
  }
  if (!cursor.done()) {
    return at_column("unexpected text after the object", cursor);
  }
  if (!has_t) {
    return "missing \"t\" (seconds since the Unix epoch)";
  }
  return std::nullopt;
}

}  // namespace sluice::replay
