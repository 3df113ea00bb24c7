#include "proxy/cost/json_path_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace sluice::cost {
namespace {

using Status = JsonPathReader::Status;

constexpr std::string_view kTotalPath[] = {"usage", "total_tokens"};
constexpr std::string_view kInputPath[] = {"usage", "input_tokens"};
constexpr std::string_view kDeepPath[] = {"a", "b", "c", "d"};
constexpr JsonTarget kUsageTargets[] = {{kTotalPath, {}, 0}, {kInputPath, {}, 1}};

std::string shown(const CostValue& value) {
  switch (value.state) {
    case CostValue::State::number:
      return std::to_string(value.number);
    case CostValue::State::invalid:
      return "invalid: " + std::string(value.why);
    case CostValue::State::absent:
      break;
  }
  return "absent";
}

/// Reads `pieces` as one document: what slot 0 and slot 1 then hold, and how the document ended.
struct ReadDocument {
  std::string total;
  std::string input;
  Status status;
};

ReadDocument read_document(JsonPathReader& reader, const std::vector<std::string_view>& pieces) {
  reader.start();
  for (const std::string_view piece : pieces) {
    reader.write(piece);
  }
  const Status status = reader.end();
  return {shown(reader.found(0)), shown(reader.found(1)), status};
}

ReadDocument read_usage(std::string_view document) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  return read_document(reader, {document});
}

TEST(JsonPathReader, FindsNumbersAtTheirPathsOnly) {
  const ReadDocument read = read_usage(
      R"({"id":"x","usage":{"nested":{"total_tokens":1},"input_tokens":12,"total_tokens":30},)"
      R"("total_tokens":2,"list":[{"usage":{"total_tokens":3}}]})");
  EXPECT_EQ(read.total, "30");
  EXPECT_EQ(read.input, "12");
  EXPECT_EQ(read.status, Status::complete);
}

TEST(JsonPathReader, SeesNothingInsideArrays) {
  EXPECT_EQ(read_usage(R"([{"usage":{"total_tokens":3}}])").total, "absent");
  EXPECT_EQ(read_usage(R"({"usage":[{"total_tokens":3}]})").total, "absent");
  EXPECT_EQ(read_usage(R"({"x":[[{"usage":{"total_tokens":3}}]]})").total, "absent");
  // An array at the path itself is a value there, and not a number.
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":[3]}})").total, "invalid: not a number");
}

TEST(JsonPathReader, TellsWhatElseIsAtThePath) {
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":null}})").total, "absent");
  EXPECT_EQ(read_usage(R"({"usage":null})").total, "absent");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":"30"}})").total, "invalid: not a number");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":true}})").total, "invalid: not a number");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":{}}})").total, "invalid: not a number");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":-30}})").total, "invalid: negative");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":30.25}})").total, "invalid: fractional");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":3.0e1}})").total, "30");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":18446744073709551615}})").total,
            "invalid: too large");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":1e400}})").total, "invalid: too large");
  // A repeated member: the last one counts, null aside.
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":1,"total_tokens":2}})").total, "2");
  EXPECT_EQ(read_usage(R"({"usage":{"total_tokens":1,"total_tokens":null}})").total, "1");
}

TEST(JsonPathReader, MatchesNamesInAnyPiecesAndEscapes) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  const std::string document =
      R"({"usag":1,"usages":{"total_tokens":2},"u\u0073age":{"total_tok\u0065ns":30},)"
      R"("usage":{"total":4,"total_tokens_x":5}})";
  for (std::size_t cut = 0; cut <= document.size(); ++cut) {
    const ReadDocument read = read_document(reader, {std::string_view(document).substr(0, cut),
                                                     std::string_view(document).substr(cut)});
    ASSERT_EQ(read.total, "30") << "cut at " << cut;
    ASSERT_EQ(read.status, Status::complete) << "cut at " << cut;
  }
  // A very long name costs nothing and matches nothing.
  EXPECT_EQ(read_usage("{\"" + std::string(100'000, 'u') + "\":{\"total_tokens\":3}}").total,
            "absent");
}

TEST(JsonPathReader, ReadsARoutesPathAndTheDocumentItself) {
  const std::vector<std::string> path = {"a", "b"};
  const JsonTarget configured[] = {{{}, path, 0}, {kDeepPath, {}, 1}};
  JsonPathReader reader;
  reader.set_targets(configured);
  ReadDocument read =
      read_document(reader, {R"({"a":{"b":7,"c":{"d":1}},"a":{"b":{"c":{"d":9}}}})"});
  EXPECT_EQ(read.total, "invalid: not a number");  // the second "a" replaced the first's 7
  EXPECT_EQ(read.input, "9");

  const JsonTarget document_itself[] = {{{}, {}, 0}};
  reader.set_targets(document_itself);
  // A bare number needs the end to be whole.
  read = read_document(reader, {"4", "2"});
  EXPECT_EQ(read.total, "42");
  EXPECT_EQ(read.status, Status::complete);
  EXPECT_EQ(read_document(reader, {"{}"}).total, "invalid: not a number");
}

TEST(JsonPathReader, TakesNoNumberTheEndWouldCut) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  ReadDocument read = read_document(reader, {R"({"usage":{"input_tokens":12,"total_tokens":30)"});
  EXPECT_EQ(read.input, "12");
  EXPECT_EQ(read.total, "absent");
  EXPECT_EQ(read.status, Status::incomplete);
  read = read_document(reader, {R"({"usage":{"input_tokens":12,"total_tokens":30})"});
  EXPECT_EQ(read.total, "30");
  EXPECT_EQ(read.status, Status::incomplete);
  read = read_document(reader, {});
  EXPECT_EQ(read.total, "absent");
  EXPECT_EQ(read.status, Status::incomplete);
}

TEST(JsonPathReader, FailsOnWhatIsNotOneDocument) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  reader.start();
  EXPECT_EQ(reader.write(R"({"usage":{"total_tokens":30}})"), Status::complete);
  EXPECT_EQ(reader.write(" \n\t"), Status::complete);
  EXPECT_EQ(reader.write("x"), Status::failed);
  EXPECT_EQ(reader.failure(), kMalformedJson);
  EXPECT_EQ(reader.write(" "), Status::failed);  // and stays so
  EXPECT_EQ(reader.end(), Status::failed);

  for (const std::string_view bad : {"{]", "{\"a\" 1}", "[1,]", "nux", "{\"a\":1}{}", "'x'"}) {
    const ReadDocument read = read_document(reader, {bad});
    EXPECT_EQ(read.status, Status::failed) << bad;
    EXPECT_EQ(reader.failure(), kMalformedJson) << bad;
  }
}

TEST(JsonPathReader, RefusesNestingDeeperThanItsBound) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  const std::string at_bound = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(read_document(reader, {at_bound}).status, Status::complete);
  reader.start();
  EXPECT_EQ(reader.write("{\"a\":" + std::string(kMaxJsonDepth, '[')), Status::failed);
  EXPECT_EQ(reader.failure(), kNestedTooDeeply);
  EXPECT_EQ(read_document(reader, {std::string(10'000, '[')}).status, Status::failed);
  EXPECT_EQ(reader.failure(), kNestedTooDeeply);
  // A new document after a failed one reads well.
  EXPECT_EQ(read_document(reader, {R"({"usage":{"total_tokens":30}})"}).total, "30");
}

}  // namespace
}  // namespace sluice::cost
