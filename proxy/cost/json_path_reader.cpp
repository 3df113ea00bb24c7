// Boost.JSON's SAX parser with a handler that keeps no document: a number is taken when its
// member path is one of the targets, and everything else only moves the position.
#include "proxy/cost/json_path_reader.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>

namespace sluice::cost {
namespace {

namespace json = boost::json;

json::parse_options reader_options() {
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  // Usage sits beside whatever text a model wrote: bytes that are not UTF-8 there must not lose it.
  options.allow_invalid_utf8 = true;
  return options;
}

}  // namespace

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
