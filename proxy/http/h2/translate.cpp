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

bool has_field(std::string_view lines, std::string_view name) noexcept {
  for (std::size_t start = 0; start < lines.size();) {
    const std::size_t end = lines.find("\r\n", start);
    const std::string_view line = lines.substr(start, end - start);
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':') {
      return true;
    }
    start = end == std::string_view::npos ? lines.size() : end + 2;
  }
  return false;
}

char lower(char c) noexcept {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

void write_request_head(const RequestStream& stream, HeadText& head) {
  write_request_line(head, stream.method,
                     stream.path.empty() ? std::string_view(stream.authority) : stream.path);
  const bool authority = !stream.authority.empty();
  if (authority) {
    write_field(head, "host", stream.authority);  // :authority wins over a Host field
  }
  for (std::size_t start = 0; start < stream.fields.size();) {
    const std::size_t end = stream.fields.find("\r\n", start) + 2;
    const std::string_view line(stream.fields.data() + start, end - start);
    if (!(authority && line.starts_with("host:"))) {
      append(head, line);
    }
    start = end;
  }
  if (!stream.cookie.empty()) {
    write_field(head, "cookie", stream.cookie);
  }
  if (!stream.body_done && !has_field(stream.fields, "content-length")) {
    append(head, "transfer-encoding: chunked\r\n");
  }
  end_head(head);
}

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
  read_fields(head.substr(std::min(head.find("\r\n"), head.size())), skip);
}

void FieldList::read_request(std::string_view head, std::string_view scheme) {
  clear();
  const std::size_t line_end = std::min(head.find("\r\n"), head.size());
  const std::string_view line = head.substr(0, line_end);
  const std::size_t first_space = line.find(' ');
  const std::size_t last_space = line.rfind(' ');
  const std::string_view lines = head.substr(line_end);
  std::string_view authority;
  for (std::size_t at = lines.find("\r\n"); at != std::string_view::npos;) {
    const std::size_t next = lines.find("\r\n", at + 2);
    const std::string_view field = lines.substr(at + 2, next - at - 2);
    if (field.size() > 5 && pipeline::equal_ignoring_case(field.substr(0, 5), "host:")) {
      authority = pipeline::trim_whitespace(field.substr(5));
      break;
    }
    at = next;
  }
  add(":method", line.substr(0, first_space));
  add(":scheme", scheme);
  add(":authority", authority);
  add(":path", line.substr(first_space + 1, last_space - first_space - 1));
  read_fields(lines, {"host"});
}

void FieldList::read_fields(std::string_view head, std::initializer_list<std::string_view> skip) {
  std::size_t line_end = head.find("\r\n");
  while (line_end != std::string_view::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, line_end - start);
    const std::size_t colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos) {
      break;  // the blank line that ends the head
    }
    const std::size_t name_at = text_.size();
    std::transform(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon),
                   std::back_inserter(text_), lower);
    const std::string_view name(text_.data() + name_at, colon);
    if (connection_specific(name) || std::find(skip.begin(), skip.end(), name) != skip.end()) {
      text_.resize(name_at);
      continue;
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    const std::size_t value_at = text_.size();
    text_ += value;
    fields_.push_back(Field{name_at, colon, value_at, value.size()});
  }
}

void FieldList::add_lines(std::string_view lines) { read_fields("\r\n" + std::string(lines), {}); }

void FieldList::add(std::string_view name, std::string_view value) {
  const std::size_t name_at = text_.size();
  text_ += name;
  const std::size_t value_at = text_.size();
  text_ += value;
  fields_.push_back(Field{name_at, name.size(), value_at, value.size()});
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
