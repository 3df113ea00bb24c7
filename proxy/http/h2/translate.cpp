#include "proxy/http/h2/translate.hpp"

#include <algorithm>
#include <cctype>

#include "proxy/pipeline/http_text.hpp"

namespace sluice::http::h2 {
namespace {

/// Fields that belong to one HTTP/1.1 connection, and the framing: never in HTTP/2.
bool connection_specific(std::string_view name) noexcept {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

char lower(char c) noexcept {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

void FieldList::clear() noexcept {
  text_.clear();
  fields_.clear();
  status_ = 0;
}

void FieldList::read(std::string_view head, std::initializer_list<std::string_view> skip) {
  clear();
  // "HTTP/1.1 200 OK": the status is the three digits after the first space.
  const std::size_t space = head.find(' ');
  unsigned status = 0;
  for (std::size_t i = space + 1; i < space + 4 && i < head.size(); ++i) {
    status = status * 10 + static_cast<unsigned>(head[i] - '0');
  }
  set_status(status);
  read_fields(head.substr(std::min(head.find("\r\n") + 2, head.size())), skip);
}

void FieldListOut::request(std::string_view method, std::string_view target,
                           std::string_view authority) {
  fields_.clear();
  fields_.add(":method", method);
  fields_.add(":scheme", scheme_);
  fields_.add(":authority", authority);
  fields_.add(":path", target);
}

void FieldListOut::response(unsigned, unsigned status, std::string_view) {
  fields_.clear();
  fields_.set_status(status);
}

void FieldListOut::field(std::string_view name, std::string_view value) {
  fields_.add_http1(name, value);
}

void FieldList::read_fields(std::string_view lines, std::initializer_list<std::string_view> skip) {
  while (!lines.empty()) {
    const std::size_t line_end = std::min(lines.find("\r\n"), lines.size());
    const std::string_view line = lines.substr(0, line_end);
    lines.remove_prefix(std::min(line_end + 2, lines.size()));
    const std::size_t colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos) {
      break;  // the blank line that ends the head
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    add_lowered(line.substr(0, colon), value, skip);
  }
}

void FieldList::add_lowered(std::string_view name, std::string_view value,
                            std::initializer_list<std::string_view> skip) {
  const std::size_t name_at = text_.size();
  std::transform(name.begin(), name.end(), std::back_inserter(text_), lower);
  const std::string_view lowered(text_.data() + name_at, name.size());
  if (connection_specific(lowered) || std::find(skip.begin(), skip.end(), lowered) != skip.end()) {
    text_.resize(name_at);
    return;
  }
  const std::size_t value_at = text_.size();
  text_ += value;
  fields_.push_back(Field{name_at, name.size(), value_at, value.size()});
}

void FieldList::add_http1(std::string_view name, std::string_view value) {
  add_lowered(name, value, {"host"});
}

void FieldList::add_lines(std::string_view lines) { read_fields(lines, {}); }

void FieldList::add(std::string_view name, std::string_view value) {
  const std::size_t name_at = text_.size();
  text_ += name;
  const std::size_t value_at = text_.size();
  text_ += value;
  fields_.push_back(Field{name_at, name.size(), value_at, value.size()});
}

std::string_view FieldList::value_of(std::string_view name) const noexcept {
  for (const Field& field : fields_) {
    const std::string_view found(text_.data() + field.name, field.name_length);
    if (pipeline::equal_ignoring_case(found, name)) {
      return {text_.data() + field.value, field.value_length};
    }
  }
  return {};
}

void FieldList::set_status(unsigned status) {
  status_ = status;
  status_text_ = {static_cast<char>('0' + status / 100 % 10),
                  static_cast<char>('0' + status / 10 % 10), static_cast<char>('0' + status % 10)};
}

const std::vector<nghttp2_nv>& FieldList::list() {
  static constexpr std::string_view kStatus = ":status";
  auto bytes = [](const char* text) {
    return reinterpret_cast<std::uint8_t*>(const_cast<char*>(text));  // nghttp2 only reads them
  };
  list_.clear();
  if (status_ != 0) {
    list_.push_back(nghttp2_nv{bytes(kStatus.data()), bytes(status_text_.data()), kStatus.size(),
                               status_text_.size(), NGHTTP2_NV_FLAG_NONE});
  }
  for (const Field& field : fields_) {
    list_.push_back(nghttp2_nv{bytes(text_.data() + field.name), bytes(text_.data() + field.value),
                               field.name_length, field.value_length, NGHTTP2_NV_FLAG_NONE});
  }
  return list_;
}

std::string grpc_message(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e || byte == '%') {
      encoded += '%';
      encoded += kHex[byte >> 4];
      encoded += kHex[byte & 0xf];
    } else {
      encoded += c;
    }
  }
  return encoded;
}

}  // namespace sluice::http::h2
