#include "proxy/replay/line_reader.hpp"

#include <cstring>

namespace sluice::replay {

LineReader::LineReader(std::FILE* input, std::size_t block_bytes)
    : input_(input), block_(block_bytes) {}

bool LineReader::refill() {
  if (eof_) {
    return false;
  }
  // Keep the partial line at the front, then read behind it.
  const std::size_t kept = end_ - begin_;
  std::memmove(block_.data(), block_.data() + begin_, kept);
  begin_ = 0;
  end_ = kept;
  if (end_ == block_.size()) {
    block_.resize(block_.size() * 2);  // a line longer than the block
  }
  const std::size_t got = std::fread(block_.data() + end_, 1, block_.size() - end_, input_);
  bytes_read_ += got;
  end_ += got;
  eof_ = got == 0;
  return got > 0;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = block_.data() + begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (newline != nullptr) {
      std::size_t length = static_cast<std::size_t>(newline - start);
      begin_ += length + 1;
      if (length > 0 && start[length - 1] == '\r') {
        --length;
      }
      line = std::string_view(start, length);
      return true;
    }
    if (!refill()) {
      if (begin_ == end_) {
        return false;
      }
      line = std::string_view(block_.data() + begin_, end_ - begin_);  // last line, no newline
      begin_ = end_;
      return true;
    }
  }
}

}  // namespace sluice::replay
