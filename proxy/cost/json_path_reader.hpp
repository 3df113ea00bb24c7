#pragma once

#include <array>
#include <boost/json/basic_parser.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proxy/cost/cost_value.hpp"

namespace sluice::cost {

/// A member path whose number a reader takes ({"usage", "total_tokens"}: the `total_tokens` member
/// of the top-level object's `usage` object), and the slot the number goes to. Its keys are the
/// meter's own (`fixed_keys`) or a route's (`configured_keys`); the reader only compares them, so
/// they must outlive it. An empty path is the document itself.
struct JsonTarget {
  std::span<const std::string_view> fixed_keys;
  std::span<const std::string> configured_keys;
  std::uint8_t slot = 0;

  std::size_t size() const { return fixed_keys.size() + configured_keys.size(); }
  std::string_view key(std::size_t i) const {
    return i < fixed_keys.size() ? fixed_keys[i]
                                 : std::string_view(configured_keys[i - fixed_keys.size()]);
  }
};

inline constexpr std::size_t kMaxJsonTargets = 16;
inline constexpr std::size_t kMaxJsonSlots = 4;
/// Objects and arrays the reader follows into; a deeper document is refused (kNestedTooDeeply).
/// It bounds the parser's own stack, the only memory a document costs.
inline constexpr std::size_t kMaxJsonDepth = 64;

/// The ending the targets' last keys share ("_tokens"), searched for first by may_hold_target();
/// empty when there is none worth it. It is part of a target's key.
std::string_view last_keys_ending(std::span<const JsonTarget> targets);

/// Whether a whole JSON document could hold a value at one of the targets' paths, found without
/// parsing it: false only when, if it is JSON at all, no target has a value there but null. A
/// document that is not JSON holds nothing anyway, so this need not validate it; it only has to
/// read JSON's strings and nesting right. When unsure (an escaped member name on a path, nesting
/// past what it tracks) it says true. `ending` is last_keys_ending(targets).
bool may_hold_target(std::string_view document, std::span<const JsonTarget> targets,
                     std::string_view ending);

/// The parser's events, matched against the targets as they come: nothing of the document is
/// kept but which targets the current position is on, one mask per open object or array.
class JsonPathEvents {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  void set_targets(std::span<const JsonTarget> targets);
  void clear();
  const CostValue& found(std::size_t slot) const { return found_[slot]; }
  const std::array<CostValue, kMaxJsonSlots>& all_found() const { return found_; }
  void restore(const std::array<CostValue, kMaxJsonSlots>& found) { found_ = found; }

  bool on_document_begin(boost::json::error_code&);
  bool on_document_end(boost::json::error_code&) { return true; }
  bool on_object_begin(boost::json::error_code& ec);
  bool on_object_end(std::size_t, boost::json::error_code&);
  bool on_array_begin(boost::json::error_code& ec);
  bool on_array_end(std::size_t, boost::json::error_code&);
  bool on_key_part(boost::json::string_view part, std::size_t, boost::json::error_code&);
  bool on_key(boost::json::string_view last, std::size_t length, boost::json::error_code&);
  bool on_string_part(boost::json::string_view, std::size_t, boost::json::error_code&) {
    return true;
  }
  bool on_string(boost::json::string_view, std::size_t, boost::json::error_code&);
  bool on_number_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_int64(std::int64_t number, boost::json::string_view, boost::json::error_code&);
  bool on_uint64(std::uint64_t number, boost::json::string_view, boost::json::error_code&);
  bool on_double(double number, boost::json::string_view, boost::json::error_code&);
  bool on_bool(bool, boost::json::error_code&);
  bool on_null(boost::json::error_code&);
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

 private:
  using Mask = std::uint16_t;  ///< One bit per target.
  static_assert(kMaxJsonTargets <= 16);

  /// The targets of `mask` whose path ends at the current depth: a value here is theirs.
  Mask ending_here(Mask mask) const;
  void take(Mask mask, const CostValue& value);
  bool open(Mask leading_deeper, boost::json::error_code& ec);

  std::span<const JsonTarget> targets_;
  std::array<CostValue, kMaxJsonSlots> found_{};
  /// For each open object or array, the targets whose path runs through it (none for arrays: a
  /// value inside an array is at no member path).
  std::array<Mask, kMaxJsonDepth + 1> open_{};
  std::size_t depth_ = 0;
  Mask value_ = 0;  ///< Targets whose path leads to or through the next value.
  Mask key_ = 0;    ///< Targets the member name read so far still matches.
  std::size_t key_length_ = 0;
  bool in_key_ = false;
};

/// The numbers at a few member paths of one JSON document that comes in pieces. Reused from
/// document to document without allocating once its parser's stack has grown (to at most
/// kMaxJsonDepth levels).
class JsonPathReader {
 public:
  enum class Status : std::uint8_t {
    reading,     ///< More may come.
    complete,    ///< A whole document was read.
    incomplete,  ///< The input ended before the document did.
    failed,      ///< Not JSON, text after the document, or too deep: see failure().
  };

  JsonPathReader();

  /// The paths to read from now on (at most kMaxJsonTargets, slots below kMaxJsonSlots). They
  /// are not copied: they must outlive their use.
  void set_targets(std::span<const JsonTarget> targets) { parser_.handler().set_targets(targets); }
  /// A new document: forgets the last one, and what was found in it.
  void start();
  /// The next piece of the document.
  Status write(std::string_view piece);
  /// The input ended. A number the end would have completed (a cut "12" of "123") is not taken.
  Status end();

  Status status() const { return status_; }
  std::string_view failure() const { return failure_; }
  /// The value last found at a slot's paths: absent if none was, or if it was null.
  const CostValue& found(std::size_t slot) const { return parser_.handler().found(slot); }

 private:
  Status fail(const boost::json::error_code& ec);

  boost::json::basic_parser<JsonPathEvents> parser_;
  Status status_ = Status::reading;
  std::string_view failure_;
};

}  // namespace sluice::cost
