#include "proxy/cost/event_stream.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace sluice::cost {
namespace {

/// Writes down what the reader passes on: "<" for a data line, its runs, ">" for an event's end.
class RecordingSink final : public EventStreamSink {
 public:
  std::size_t data_line(std::string_view) override {
    seen += '<';
    return 0;
  }
  void data(std::string_view run) override {
    seen += run;
    ++runs;
  }
  void event_end() override { seen += '>'; }

  std::string seen;
  std::size_t runs = 0;
};

std::string lines_of(const std::vector<std::string_view>& pieces) {
  EventStreamReader reader;
  RecordingSink sink;
  for (const std::string_view piece : pieces) {
    reader.write(piece, sink);
  }
  return sink.seen;
}

/// What `stream` passes on whole, checked to be the same a byte at a time and cut in two at every
/// place.
std::string lines_in_any_pieces(std::string_view stream) {
  const std::string whole = lines_of({stream});
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    bytes.push_back(stream.substr(i, 1));
  }
  EXPECT_EQ(lines_of(bytes), whole) << "a byte at a time";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(lines_of({stream.substr(0, cut), stream.substr(cut)}), whole) << "cut at " << cut;
  }
  return whole;
}

TEST(EventStreamReader, PassesDataLinesAndEventEnds) {
  EXPECT_EQ(lines_in_any_pieces("data: {\"a\":1}\n\ndata: [DONE]\n\n"), "<{\"a\":1}><[DONE]>");
}

TEST(EventStreamReader, EndsLinesInLfCrLfOrCr) {
  EXPECT_EQ(lines_in_any_pieces("data: a\r\n\r\ndata: b\r\rdata: c\n\n"), "<a><b><c>");
  // \r\n is one ending, even when a piece ends between them; \n\r is two.
  EXPECT_EQ(lines_in_any_pieces("data: a\r\ndata: b\n\rdata: c"), "<a<b><c");
}

TEST(EventStreamReader, DropsOneSpaceAfterTheColonOnly) {
  EXPECT_EQ(lines_in_any_pieces("data:a\ndata: b\ndata:  c\ndata:\ndata\n\n"), "<a<b< c<<>");
}

TEST(EventStreamReader, SkipsCommentsAndOtherFields) {
  EXPECT_EQ(lines_in_any_pieces(": ping\nevent: message_delta\nid: 4\nretry: 10\nDATA: x\n"
                                "data : y\ndatum: z\n:data: w\ndata: v\n\n"),
            "<v>");
  // A name longer than any field that matters, even one that starts as "data".
  EXPECT_EQ(
      lines_in_any_pieces("data" + std::string(100, 'x') + ": no\ndataxxxxxxxxxxxxxxxx: no\n\n"),
      ">");
}

TEST(EventStreamReader, SkipsAByteOrderMarkOnTheFirstLineOnly) {
  EXPECT_EQ(lines_in_any_pieces("\xEF\xBB\xBF"
                                "data: a\n\xEF\xBB\xBF"
                                "data: b\n\n"),
            "<a>");
}

TEST(EventStreamReader, HoldsNoValueButPassesItInTheRunsItCameIn) {
  const std::string value(1'000'000, 'v');
  EventStreamReader reader;
  RecordingSink sink;
  const std::string stream = "data: " + value + "\n\n";
  for (std::size_t at = 0; at < stream.size(); at += 4096) {
    reader.write(std::string_view(stream).substr(at, 4096), sink);
  }
  EXPECT_EQ(sink.seen, "<" + value + ">");
  EXPECT_EQ(sink.runs, (stream.size() + 4095) / 4096);
  EXPECT_LE(sizeof(EventStreamReader), 32U);
}

/// Takes what it may of each data line (a whole one-line event, or a line cut by the piece's
/// end) and writes it down as RecordingSink would have had it.
class TakingSink final : public EventStreamSink {
 public:
  std::size_t data_line(std::string_view ahead) override {
    seen += '<';
    const std::size_t space = !ahead.empty() && ahead.front() == ' ' ? 1 : 0;
    const std::string_view value = ahead.substr(space);
    const std::size_t end = first_line_end(value);
    if (end == value.size() && !value.empty()) {
      seen += value;
      return ahead.size();
    }
    if (end + 1 < value.size() && value[end] == '\n' && value[end + 1] == '\n') {
      seen += value.substr(0, end);
      seen += '>';
      return space + end + 2;
    }
    return 0;
  }
  void data(std::string_view run) override { seen += run; }
  void event_end() override { seen += '>'; }

  std::string seen;
};

TEST(EventStreamReader, GoesPastWhatTheSinkTakes) {
  const std::string_view stream =
      "data: {\"a\":1}\n\nevent: x\ndata:b\n\ndata: c\r\n\r\ndata: d\ndata: e\n\ndata\n\n"
      "data:  f\n\n: data: g\n\ndata: h";
  const std::string whole = lines_of({stream});
  EXPECT_EQ(whole, "<{\"a\":1}><b><c><d<e><>< f>><h");  // a blank line ends an event, empty or not
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    for (std::size_t size = 1; size <= stream.size(); ++size) {
      EventStreamReader reader;
      TakingSink sink;
      reader.write(stream.substr(0, cut), sink);
      for (std::size_t at = cut; at < stream.size(); at += size) {
        reader.write(stream.substr(at, size), sink);
      }
      if (sink.seen != whole) {
        ADD_FAILURE() << "cut at " << cut << ", then pieces of " << size << ": " << sink.seen;
        return;
      }
    }
  }
}

TEST(EventStreamReader, StartsAfreshForANewStream) {
  EventStreamReader reader;
  RecordingSink sink;
  reader.write(std::string_view("data: cut\r"), sink);
  reader.start();
  reader.write(std::string_view("\ndata: next\n\n"), sink);
  // The \n is the new stream's blank line, not the old one's \r\n.
  EXPECT_EQ(sink.seen, "<cut><next>");
}

}  // namespace
}  // namespace sluice::cost
