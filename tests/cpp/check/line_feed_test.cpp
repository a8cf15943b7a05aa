// The online checker's line feed (check/online/line_feed.h): lines nothing wants are never parsed, a bad
// line is named by source and line, and a batch's records come out merged by time, holding back those
// past a horizon.
#include "check/online/line_feed.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
