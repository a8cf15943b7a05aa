// The online checker's line feed (check/online/line_feed.h): lines nothing wants are never parsed, a bad
// line is named by source and line, state lines built from templates are the records parsing gives, and a batch's records come out merged by time, holding back those
// past a horizon.
#include "check/online/line_feed.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/record_description.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

std::string call_line(const std::string& fn, int64_t time) {
  return "{\"type\": \"function_call (pre)\", \"function\": \"" + fn + "\", \"func_call_id\": \"c" + std::to_string(time) +
         "\", \"process_id\": 7, \"thread_id\": 1, \"time\": " + std::to_string(time) +
         ", \"meta_vars\": {\"step\": 1, \"stage\": \"training\"}, \"args\": {}, \"kwargs\": {}}\n";
}

struct Fed {
  std::vector<std::string> parsed;     // functions of every record parsed
  std::vector<int64_t> delivered;      // times of the records handed over, in order
};

LineFeed feed_wanting(const std::string& wanted, Fed& fed) {
  return LineFeed(FeedInterest{[] { return false; }, [wanted](std::string_view name) { return name == wanted; },
                               [wanted](const Record& r) { return r.function == wanted; }},
                  [&fed](const Record& r) { fed.parsed.push_back(std::string(r.function)); });
}

}  // namespace

TEST(LineFeed, ParsesOnlyLinesWhoseFunctionIsWantedAndDeliversThemMergedByTime) {
  Fed fed;
  LineFeed feed = feed_wanting("f", fed);
  feed.add_lines("a.log", call_line("f", 30) + call_line("g", 31) + call_line("f", 50));
  feed.add_lines("b.log", call_line("f", 40) + call_line("g", 41));
  EXPECT_EQ(fed.parsed, (std::vector<std::string>{"f", "f", "f"}));  // g's lines skipped unparsed
  feed.end_batch(std::nullopt, [&](const Record& r) { fed.delivered.push_back(r.time); });
  EXPECT_EQ(fed.delivered, (std::vector<int64_t>{30, 40, 50}));
  EXPECT_EQ(feed.lines(), 5u);
  // The last line of a source bounds what it delivered, even when that line was not wanted.
  EXPECT_EQ(feed.last_time("b.log"), 41);
  EXPECT_EQ(feed.last_time("a.log"), 50);
  EXPECT_EQ(feed.last_time("c.log"), std::nullopt);
}

TEST(LineFeed, RecordsPastTheHorizonWaitForTheNextBatch) {
  Fed fed;
  LineFeed feed = feed_wanting("f", fed);
  feed.add_lines("a.log", call_line("f", 10) + call_line("f", 20) + call_line("f", 30));
  auto deliver = [&](const Record& r) { fed.delivered.push_back(r.time); };
  feed.end_batch(20, deliver);
  EXPECT_EQ(fed.delivered, (std::vector<int64_t>{10, 20}));
  feed.add_lines("b.log", call_line("f", 25));
  feed.end_batch(std::nullopt, deliver);
  EXPECT_EQ(fed.delivered, (std::vector<int64_t>{10, 20, 25, 30}));
}

TEST(LineFeed, ABadLineIsCountedAndNamedBySourceAndLineNumber) {
  Fed fed;
  LineFeed feed = feed_wanting("f", fed);
  feed.add_lines("a.log", call_line("f", 1) + "{\"function\": \"f\", \"time\": \n" + call_line("f", 3));
  ASSERT_EQ(feed.bad_lines(), 1u);
  ASSERT_EQ(feed.recent_errors().size(), 1u);
  EXPECT_EQ(feed.recent_errors()[0].rfind("a.log:2: ", 0), 0u) << feed.recent_errors()[0];
  EXPECT_EQ(fed.parsed.size(), 2u);
}

TEST(LineFeed, StateLinesBuiltFromTemplatesAreTheRecordsParsingGives) {
  auto state_line = [](const std::string& name, int rank, int step) {
    return "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":" + std::to_string(10 + rank) +
           ",\"thread_id\":1,\"meta_vars\":{\"step\":" + std::to_string(step) +
           ",\"stage\":\"training\"},\"type\":\"state_change\",\"attributes\":{\"data\":" + std::to_string(step * 7 - 20) +
           ",\"shape\":[4]},\"time\":" + std::to_string(100 * step + rank) + "}\n";
  };
  std::vector<std::string> delivered;
  LineFeed feed(FeedInterest{[] { return false; }, [](std::string_view name) { return name == "torch.nn.Parameter"; },
                             [](const Record& r) { return r.var_type == "torch.nn.Parameter"; }},
                [](const Record&) {});
  std::vector<std::string> expected;
  JsonParser parser;
  std::string error;
  for (int step = 0; step < 4; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      std::string text;
      for (const char* name : {"w", "b"}) {
        const std::string line = state_line(name, rank, step);
        text += line;
        std::string padded = line;
        padded.append(kJsonPadding, '\0');
        Record parsed;
        ASSERT_TRUE(parse_trace_line(parser, padded.data(), line.size() - 1, parsed, error)) << error;
        expected.push_back(describe_record(parsed));
      }
      feed.add_lines("r" + std::to_string(rank) + ".log", text);
    }
    feed.end_batch(std::nullopt, [&](const Record& r) { delivered.push_back(describe_record(r)); });
  }
  EXPECT_EQ(delivered, expected);  // in time order: rank 0's before rank 1's within a step
  EXPECT_EQ(feed.templates().built(), 12u);  // every line after each source's first of a variable
}

TEST(LineFeed, RecordsInDeliveredRecordsStorageAreTheRecordsParsingGives) {
  // A batch's records are written over the storage of records delivered before (line_feed.h): built from
  // a template there, parsed there, held back past a horizon and moved; each still the record its line
  // parses to alone, with nothing of the record that was there before.
  auto state_line = [](const std::string& name, int step, const std::string& shape) {
    return "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":10,\"thread_id\":1," +
           "\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"stage\":\"training\"},\"type\":\"state_change\"," +
           "\"attributes\":{\"data\":" + std::to_string(step * 7 - 20) + ",\"shape\":" + shape + "},\"time\":" +
           std::to_string(100 * step + static_cast<int>(name.size())) + "}\n";
  };
  LineFeed feed(FeedInterest{[] { return false; },
                             [](std::string_view name) { return name == "torch.nn.Parameter" || name == "f"; },
                             [](const Record& r) { return r.var_type == "torch.nn.Parameter" || r.function == "f"; }},
                [](const Record&) {});
  const std::vector<std::vector<std::string>> batches = {
      {state_line("w", 0, "[4]"), state_line("bias", 0, "[4]")},
      {state_line("w", 1, "[4]"), state_line("bias", 1, "[4]"), call_line("f", 150)},  // horizon 120: bias and f wait
      {call_line("f", 201), state_line("w", 2, "[4, 2]"), state_line("bias", 2, "[4]"), call_line("f", 260)},
  };
  const std::vector<std::optional<int64_t>> horizons = {std::nullopt, 120, std::nullopt};
  std::vector<std::string> expected, delivered;
  JsonParser parser;
  std::string error;
  std::vector<std::pair<int64_t, std::string>> waiting;  // (time, description) of records not yet delivered
  for (size_t b = 0; b < batches.size(); ++b) {
    std::string text;
    for (const std::string& line : batches[b]) {
      text += line;
      std::string padded = line;
      padded.append(kJsonPadding, '\0');
      Record parsed;
      ASSERT_TRUE(parse_trace_line(parser, padded.data(), line.size() - 1, parsed, error)) << error;
      waiting.emplace_back(parsed.time, describe_record(parsed));
    }
    feed.add_lines("a.log", text);
    std::stable_sort(waiting.begin(), waiting.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    while (!waiting.empty() && (!horizons[b] || waiting.front().first <= *horizons[b])) {
      expected.push_back(waiting.front().second);
      waiting.erase(waiting.begin());
    }
    feed.end_batch(horizons[b], [&](const Record& r) { delivered.push_back(describe_record(r)); });
    EXPECT_EQ(delivered, expected) << "batch " << b;
  }
  EXPECT_EQ(delivered.size(), 9u);
  EXPECT_EQ(feed.templates().built(), 3u);  // step 1's two lines and step 2's bias
}
