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

TEST(MayHoldTarget, SaysNoOnlyWhereNoTargetHasAValueButNull) {
  const std::string_view ending = last_keys_ending(kUsageTargets);
  EXPECT_EQ(ending, "_tokens");
  const auto may = [ending](std::string_view document) {
    return may_hold_target(document, kUsageTargets, ending);
  };
  EXPECT_FALSE(may(R"({"id":"x","choices":[{"delta":{"content":"hi"}}],"usage":null})"));
  EXPECT_FALSE(may(R"({"usage" : null, "usage":{"other":1}})"));
  EXPECT_FALSE(may(R"({"usage":{"total_tokens":null,"input_tokens" :  null}})"));
  EXPECT_FALSE(may("[DONE]"));
  EXPECT_FALSE(may(R"([{"usage":{"total_tokens":1}}])"));  // no member path into an array
  // Names inside strings are text, escaped quotes and backslashes and all.
  EXPECT_FALSE(may(R"({"text":"\"usage\":{\"total_tokens\":5}","usage":null})"));
  EXPECT_FALSE(may(R"({"text":"a\\","t":"\"total_tokens\":5 \\\"usage\":{"})"));
  // Deeper objects named usage are on no path.
  EXPECT_FALSE(
      may(R"({"choices":[{"usage":{"total_tokens":5}}],"x":{"usage":{"total_tokens":6}}})"));
  EXPECT_FALSE(may(R"({"usage":{"a":{"total_tokens":7}}})"));
  EXPECT_FALSE(may(R"({"usage":5,"total_tokens":6})"));
  // Anything else may: a value at a path, whatever it is, with spaces anywhere JSON allows them.
  EXPECT_TRUE(may(R"({"usage":{"total_tokens":5}})"));
  EXPECT_TRUE(may("{ \"usage\" :\t{ \"input_tokens\" : 5 } }"));
  EXPECT_TRUE(may(R"({"usage":{"total_tokens":"5"}})"));
  EXPECT_TRUE(may(R"({"usage":{"total_tokens":{}}})"));
  EXPECT_TRUE(may(R"({"text":"\"usage\":null","usage":{"total_tokens":0}})"));
  EXPECT_TRUE(may(R"({"x":"a\\","usage":{"total_tokens":1}})"));
  // An escape may spell a name on a path.
  EXPECT_TRUE(may(R"({"\u0075sage":{"total_tokens":8}})"));
  EXPECT_TRUE(may(R"({"usage":{"total\u005ftokens":8}})"));
  // The document itself is a target's value.
  constexpr std::string_view kNoKeys[] = {"x"};
  const JsonTarget whole[] = {{{}, {}, 0}, {kNoKeys, {}, 1}};
  EXPECT_TRUE(may_hold_target("[DONE]", whole, last_keys_ending(whole)));
}

TEST(MayHoldTarget, NeverSaysNoWhereTheReaderFindsAValue) {
  JsonPathReader reader;
  reader.set_targets(kUsageTargets);
  const std::string_view ending = last_keys_ending(kUsageTargets);
  for (const std::string_view document :
       {R"({"usage":{"total_tokens":5}})", R"({"usage":{"total_tokens":-1}})",
        R"({"usage":{"input_tokens":[1]}})", R"({ "usage" : { "total_tokens" : 5 } })",
        R"({"usage":{"total_tokens":5},"usage":null})", R"({"\u0075sage":{"total_tokens":8}})",
        R"({"a":"\\","usage":{"total_tokens":5}})", R"({"a":"\"","usage":{"total_tokens":5}})",
        R"({"usage":{"x":{},"y":[{"total_tokens":1}],"input_tokens":2}})"}) {
    const ReadDocument read = read_document(reader, {document});
    ASSERT_TRUE(read.total != "absent" || read.input != "absent") << document;
    EXPECT_TRUE(may_hold_target(document, kUsageTargets, ending)) << document;
  }
}

}  // namespace
}  // namespace sluice::cost
