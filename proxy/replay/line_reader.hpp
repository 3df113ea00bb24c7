#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::replay {

/// Reads lines from a stream in large blocks (no per-line allocation or copy): each line is a
/// view into the block, valid until the next call. Memory is one block, however long the input;
/// a line longer than a block grows it.
class LineReader {
 public:
  explicit LineReader(std::FILE* input, std::size_t block_bytes = 1 << 20);

  /// The next line without its newline (and without a trailing \r); false at the end.
  bool next(std::string_view& line);
  std::size_t bytes_read() const noexcept { return bytes_read_; }

 private:
  bool refill();

  std::FILE* input_;
  std::vector<char> block_;
  std::size_t begin_ = 0;  ///< Start of unread data in block_.
  std::size_t end_ = 0;    ///< End of data in block_.
  std::size_t bytes_read_ = 0;
  bool eof_ = false;
};

/// Collects output and writes it in large blocks.
class OutputBuffer {
 public:
  explicit OutputBuffer(std::FILE* output) : output_(output) { text_.reserve(kFlushAt + 4096); }
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;
  OutputBuffer(OutputBuffer&&) = delete;
  OutputBuffer& operator=(OutputBuffer&&) = delete;
  ~OutputBuffer() { flush(); }

  std::string& text() noexcept { return text_; }
  /// Writes out what has gathered once it is large; call after each record.
  void maybe_flush() {
    if (text_.size() >= kFlushAt) {
      flush();
    }
  }
  void flush() {
    if (!text_.empty()) {
      std::fwrite(text_.data(), 1, text_.size(), output_);
      text_.clear();
    }
    std::fflush(output_);
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  std::FILE* output_;
  std::string text_;
};

}  // namespace sluice::replay
