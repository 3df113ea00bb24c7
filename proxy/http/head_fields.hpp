#pragma once

#include <boost/beast/http/field.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "proxy/pipeline/http_text.hpp"
#include "proxy/pipeline/request_view.hpp"

namespace sluice::http {

/// A message head's text, copied out of the read buffer into storage that a connection keeps
/// from one message to the next: the start line's parts and the fields in order, each with
/// Beast's id for its name. A warm connection parses a head without allocating (Beast's own
/// field container allocates a node per field and keeps a tree of them, about 3 % of a forwarded
/// request's CPU for the 5 or 6 fields of a request and its response).
///
/// While a head is parsed its parts are kept as offsets, since the storage may grow; `seal()`
/// turns them into views, which stay valid until the next `clear()`.
class HeadFields {
 public:
  using Field = boost::beast::http::field;

  /// A part of the head: where its copy starts in the storage, and its length.
  struct Span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };

  /// Text kept between messages: a usual head fits (nginx reads heads into 1 KiB, and larger
  /// ones into 8 KiB buffers that it frees when the connection goes idle).
  static constexpr std::size_t kKeptTextBytes = 4096;
  /// Fields kept between messages.
  static constexpr std::size_t kKeptFields = 64;

  void clear() noexcept {
    text_.clear();
    ids_.clear();
    spans_.clear();
    headers_.clear();
    sealed_ = false;
  }

  /// clear(), and gives back storage that an unusually large head made grow, so that a
  /// connection waiting for its next request does not keep it.
  void trim() noexcept {
    clear();
    if (text_.capacity() > kKeptTextBytes) {
      std::vector<char>().swap(text_);
    }
    if (ids_.capacity() > kKeptFields) {
      std::vector<Field>().swap(ids_);
      std::vector<FieldSpans>().swap(spans_);
      std::vector<pipeline::Header>().swap(headers_);
    }
  }

  /// Bytes of storage held, for tests of what an idle connection keeps.
  std::size_t storage_bytes() const noexcept {
    return text_.capacity() + ids_.capacity() * sizeof(Field) +
           spans_.capacity() * sizeof(FieldSpans) + headers_.capacity() * sizeof(pipeline::Header);
  }

  /// Copies a part of the start line (method, target or reason).
  Span keep(std::string_view part) {
    const Span span{static_cast<std::uint32_t>(text_.size()),
                    static_cast<std::uint32_t>(part.size())};
    text_.insert(text_.end(), part.begin(), part.end());
    return span;
  }

  /// Copies a field. Fields that come after seal() (a chunked body's trailer) are dropped: the
  /// proxy does not forward trailers, and the views already handed out must stay valid.
  void add(Field id, std::string_view name, std::string_view value) {
    if (sealed_) {
      return;
    }
    ids_.push_back(id);
    spans_.push_back({keep(name), keep(value)});
  }

  /// Adds a field whose value is text already kept (a part of the start line), for a field the
  /// parser puts in place of the one received.
  void add(Field id, std::string_view name, Span value) {
    if (sealed_) {
      return;
    }
    ids_.push_back(id);
    spans_.push_back({keep(name), value});
  }

  /// The head is complete: from here on, views.
  void seal() {
    headers_.clear();
    for (const auto& [name, value] : spans_) {
      headers_.push_back({view(name), view(value)});
    }
    sealed_ = true;
  }

  std::string_view view(Span span) const noexcept {
    return {text_.data() + span.offset, span.length};
  }

  // After seal():
  std::size_t size() const noexcept { return headers_.size(); }
  Field id(std::size_t index) const noexcept { return ids_[index]; }
  const pipeline::Header& at(std::size_t index) const noexcept { return headers_[index]; }
  std::span<const pipeline::Header> headers() const noexcept { return headers_; }

  /// The first field with this id, or "".
  std::string_view value_of(Field id) const noexcept {
    for (std::size_t index = 0; index < ids_.size(); ++index) {
      if (ids_[index] == id) {
        return headers_[index].value;
      }
    }
    return {};
  }
  /// The first field with this name (case-insensitive), or "".
  std::string_view value_of(std::string_view name) const noexcept {
    for (const pipeline::Header& header : headers_) {
      if (pipeline::equal_ignoring_case(header.name, name)) {
        return header.value;
      }
    }
    return {};
  }

 private:
  struct FieldSpans {
    Span name;
    Span value;
  };

  std::vector<char> text_;
  std::vector<Field> ids_;
  std::vector<FieldSpans> spans_;
  std::vector<pipeline::Header> headers_;
  bool sealed_ = false;
};

}  // namespace sluice::http
