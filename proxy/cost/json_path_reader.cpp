// Boost.JSON's SAX parser with a handler that keeps no document: a number is taken when its
// member path is one of the targets, and everything else only moves the position.
#include "proxy/cost/json_path_reader.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sluice::cost {
namespace {

namespace json = boost::json;

/// The closing quote of the string whose text starts at `p`, or `end`; `escaped` if it has an
/// escape. Strings are most of a document's bytes: 16 at a time where SSE2 is.
const char* string_end(const char* p, const char* end, bool& escaped) {
  for (;;) {
#if defined(__SSE2__)
    while (end - p >= 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const int stops = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')),
                                                       _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'))));
      if (stops != 0) {
        p += __builtin_ctz(static_cast<unsigned>(stops));
        break;
      }
      p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') {
      ++p;
    }
    if (p == end || *p == '"') {
      return p;
    }
    escaped = true;
    p += 2;  // the backslash and the byte it escapes
    if (p >= end) {
      return end;
    }
  }
}

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// A quick look that most documents without usage pass: true when each member named as a path's
/// last key (a value at a path is such a member) has null for its value, wherever it is. Names
/// are matched as written, so a document with a \u escape, which could spell one, does not pass.
bool last_keys_only_null(std::string_view document, std::span<const JsonTarget> targets,
                         std::string_view ending) {
  if (ending.empty()) {
    return false;
  }
  for (std::size_t at = document.find('\\'); at != std::string_view::npos;
       at = document.find('\\', at + 2)) {
    if (at + 1 < document.size() && document[at + 1] == 'u') {
      return false;
    }
  }
  for (std::size_t at = document.find(ending); at != std::string_view::npos;
       at = document.find(ending, at + 1)) {
    const std::size_t name_end = at + ending.size();
    if (name_end >= document.size() || document[name_end] != '"') {
      continue;
    }
    bool named = false;
    for (const JsonTarget& target : targets) {
      const std::string_view last = target.key(target.size() - 1);
      named = named || (name_end > last.size() && document[name_end - last.size() - 1] == '"' &&
                        document.substr(name_end - last.size(), last.size()) == last);
    }
    std::size_t p = name_end + 1;
    while (p < document.size() && json_space(document[p])) {
      ++p;
    }
    if (!named || p == document.size() || document[p] != ':') {
      continue;  // another name, or a string that is no member's name
    }
    ++p;
    while (p < document.size() && json_space(document[p])) {
      ++p;
    }
    if (p < document.size() && document[p] != 'n') {
      return false;
    }
  }
  return true;
}

json::parse_options reader_options() {
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  // Usage sits beside whatever text a model wrote: bytes that are not UTF-8 there must not lose it.
  options.allow_invalid_utf8 = true;
  return options;
}

}  // namespace

std::string_view last_keys_ending(std::span<const JsonTarget> targets) {
  targets = targets.first(std::min(targets.size(), kMaxJsonTargets));
  if (targets.empty() || targets[0].size() == 0) {
    return {};
  }
  std::string_view ending = targets[0].key(targets[0].size() - 1);
  for (const JsonTarget& target : targets) {
    if (target.size() == 0) {
      return {};
    }
    const std::string_view last = target.key(target.size() - 1);
    if (std::any_of(last.begin(), last.end(), [](char c) {
          return c == '"' || c == '\\' || c == '/' || (c >= 0 && c < 0x20);
        })) {
      return {};  // a name that may be written with an escape other than \u
    }
    std::size_t common = 0;
    while (common < ending.size() && common < last.size() &&
           ending[ending.size() - 1 - common] == last[last.size() - 1 - common]) {
      ++common;
    }
    ending = ending.substr(ending.size() - common);
  }
  return ending.size() < 4 ? std::string_view() : ending;  // a shorter one is too common
}

bool may_hold_target(std::string_view document, std::span<const JsonTarget> targets,
                     std::string_view key_ending) {
  using Mask = std::uint32_t;
  targets = targets.first(std::min(targets.size(), kMaxJsonTargets));
  for (const JsonTarget& target : targets) {
    if (target.size() == 0) {
      return true;  // the document itself
    }
  }
  if (last_keys_only_null(document, targets, key_ending)) {
    return false;
  }
  const char* const end = document.data() + document.size();
  auto skip_space = [end](const char* p) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
      ++p;
    }
    return p;
  };
  const char* p = skip_space(document.data());
  if (p == end || *p != '{') {
    return false;  // no member paths in anything but an object
  }
  // The targets each open container's member path is on, as far as any target reaches; deeper
  // containers are on none.
  constexpr std::size_t kTracked = 8;
  std::array<Mask, kTracked> open{};
  open[0] = (Mask{1} << targets.size()) - 1;
  std::size_t depth = 1;
  ++p;
  while (p < end) {
    const char c = *p++;
    if (c == '{' || c == '[') {
      if (depth < kTracked) {
        open[depth] = 0;
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        return false;
      }
    } else if (c == '"') {
      const char* const first = p;
      bool escaped = false;
      p = string_end(p, end, escaped);
      if (p == end) {
        return false;  // cut: not JSON
      }
      const char* const close = p;
      p = close + 1;
      const Mask on = depth <= kTracked ? open[depth - 1] : 0;
      if (on == 0) {
        continue;
      }
      const char* colon = skip_space(p);
      if (colon == end || *colon != ':') {
        continue;  // a value, not a member name
      }
      const std::string_view name(first, static_cast<std::size_t>(close - first));
      if (escaped) {
        return true;  // an escaped name may spell a target's key
      }
      Mask ending = 0;
      Mask deeper = 0;
      for (std::size_t t = 0; t < targets.size(); ++t) {
        if ((on & (Mask{1} << t)) != 0 && targets[t].key(depth - 1) == name) {
          (targets[t].size() == depth ? ending : deeper) |= Mask{1} << t;
        }
      }
      if ((ending | deeper) == 0) {
        continue;
      }
      p = skip_space(colon + 1);
      if (p == end || *p == 'n') {
        continue;  // null: not here
      }
      if (ending != 0) {
        return true;
      }
      if (*p == '{') {
        if (depth >= kTracked) {
          return true;
        }
        open[depth] = deeper;
        ++depth;
        ++p;
      }
      // Any other value holds no member path.
    }
  }
  return false;
}

void JsonPathEvents::set_targets(std::span<const JsonTarget> targets) {
  targets_ = targets.first(std::min(targets.size(), kMaxJsonTargets));
  clear();
}

void JsonPathEvents::clear() {
  found_ = {};
  depth_ = 0;
  value_ = 0;
  in_key_ = false;
}

JsonPathEvents::Mask JsonPathEvents::ending_here(Mask mask) const {
  Mask ending = 0;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if ((mask & (1U << t)) != 0 && targets_[t].size() == depth_) {
      ending = static_cast<Mask>(ending | (1U << t));
    }
  }
  return ending;
}

void JsonPathEvents::take(Mask mask, const CostValue& value) {
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if ((mask & (1U << t)) != 0 && targets_[t].slot < found_.size()) {
      found_[targets_[t].slot] = value;
    }
  }
  value_ = 0;
}

bool JsonPathEvents::open(Mask leading_deeper, json::error_code& ec) {
  if (depth_ >= kMaxJsonDepth) {  // the parser's max_depth stops it first
    ec = json::error::too_deep;
    return false;
  }
  open_[depth_] = leading_deeper;
  ++depth_;
  value_ = 0;
  in_key_ = false;
  return true;
}

bool JsonPathEvents::on_document_begin(json::error_code&) {
  depth_ = 0;
  value_ = static_cast<Mask>((1U << targets_.size()) - 1);
  in_key_ = false;
  return true;
}

bool JsonPathEvents::on_object_begin(json::error_code& ec) {
  const Mask ending = ending_here(value_);
  const Mask deeper = static_cast<Mask>(value_ & ~ending);
  take(ending, CostValue::refused(kNotANumber));
  return open(deeper, ec);
}

bool JsonPathEvents::on_array_begin(json::error_code& ec) {
  take(ending_here(value_), CostValue::refused(kNotANumber));
  return open(0, ec);  // no member path goes into an array
}

bool JsonPathEvents::on_object_end(std::size_t, json::error_code&) {
  --depth_;
  value_ = 0;
  return true;
}

bool JsonPathEvents::on_array_end(std::size_t, json::error_code&) {
  --depth_;
  value_ = 0;
  return true;
}

bool JsonPathEvents::on_key_part(json::string_view part, std::size_t, json::error_code&) {
  if (!in_key_) {
    key_ = open_[depth_ - 1];
    key_length_ = 0;
    in_key_ = true;
  }
  // Compared piece by piece against each target's key: a name of any length costs no memory.
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if ((key_ & (1U << t)) == 0) {
      continue;
    }
    const std::string_view wanted = targets_[t].key(depth_ - 1);
    if (wanted.size() < key_length_ + part.size() ||
        wanted.substr(key_length_, part.size()) != std::string_view(part.data(), part.size())) {
      key_ = static_cast<Mask>(key_ & ~(1U << t));
    }
  }
  key_length_ += part.size();
  return true;
}

bool JsonPathEvents::on_key(json::string_view last, std::size_t length, json::error_code& ec) {
  on_key_part(last, length, ec);
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if ((key_ & (1U << t)) != 0 && targets_[t].key(depth_ - 1).size() != key_length_) {
      key_ = static_cast<Mask>(key_ & ~(1U << t));
    }
  }
  value_ = key_;
  in_key_ = false;
  return true;
}

bool JsonPathEvents::on_string(json::string_view, std::size_t, json::error_code&) {
  take(ending_here(value_), CostValue::refused(kNotANumber));
  return true;
}

bool JsonPathEvents::on_int64(std::int64_t number, json::string_view, json::error_code&) {
  take(ending_here(value_), cost_of_integer(number));
  return true;
}

bool JsonPathEvents::on_uint64(std::uint64_t number, json::string_view, json::error_code&) {
  take(ending_here(value_), cost_of_unsigned(number));
  return true;
}

bool JsonPathEvents::on_double(double number, json::string_view, json::error_code&) {
  take(ending_here(value_), cost_of_double(number));
  return true;
}

bool JsonPathEvents::on_bool(bool, json::error_code&) {
  take(ending_here(value_), CostValue::refused(kNotANumber));
  return true;
}

bool JsonPathEvents::on_null(json::error_code&) {
  // Null says "not here": OpenAI streams send `"usage": null` on every chunk but the last.
  value_ = 0;
  return true;
}

JsonPathReader::JsonPathReader() : parser_(reader_options()) {}

void JsonPathReader::start() {
  parser_.reset();
  parser_.handler().clear();
  status_ = Status::reading;
  failure_ = {};
}

JsonPathReader::Status JsonPathReader::write(std::string_view piece) {
  if (status_ != Status::reading && status_ != Status::complete) {
    return status_;
  }
  if (piece.empty()) {
    return status_;
  }
  json::error_code ec;
  const std::size_t parsed = parser_.write_some(true, piece.data(), piece.size(), ec);
  if (ec) {
    return fail(ec);
  }
  if (parsed < piece.size()) {
    // Text after a whole document. The parser would start another on the next write: never.
    failure_ = kMalformedJson;
    return status_ = Status::failed;
  }
  return status_ = parser_.done() ? Status::complete : Status::reading;
}

JsonPathReader::Status JsonPathReader::end() {
  if (status_ != Status::reading) {
    return status_;
  }
  // Only a document that is a bare number needs the end to complete; anything the end completes
  // in a document cut short (its last number, cut) is dropped with the document's error.
  const std::array<CostValue, kMaxJsonSlots> before_end = parser_.handler().all_found();
  static constexpr char kNothing[] = "";
  json::error_code ec;
  parser_.write_some(false, kNothing, 0, ec);
  if (ec) {
    parser_.handler().restore(before_end);
    return status_ = Status::incomplete;
  }
  return status_ = Status::complete;
}

JsonPathReader::Status JsonPathReader::fail(const json::error_code& ec) {
  failure_ = ec == json::error::too_deep ? kNestedTooDeeply : kMalformedJson;
  return status_ = Status::failed;
}

}  // namespace sluice::cost
