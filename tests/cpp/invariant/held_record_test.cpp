// HeldRecord (invariant/held_record.h): a record kept by an online check, by address when its driver
// feeds lasting records (the replayed offline check), else as a copy that survives the check's tables
// moving it around.
#include "invariant/held_record.h"

#include <gtest/gtest.h>

#include <vector>

#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

Record record_of(const std::string& line) { return read_trace_text("t", line + "\n").records.at(0); }

}  // namespace

TEST(HeldRecord, LastingRecordsAreHeldByAddressOthersAsCopies) {
  const Record original = record_of(R"j({"function": "f", "func_call_id": "c1", "type": "function_call (pre)", "process_id": 1, "thread_id": 2, "time": 5})j");
  const HeldRecord by_address(original, true);
  EXPECT_EQ(&*by_address, &original);
  const HeldRecord copied(original, false);
  EXPECT_NE(&*copied, &original);
  EXPECT_EQ(copied->func_call_id(), "c1");
  EXPECT_FALSE(HeldRecord().has_value());
}

// A copy stays readable after the driver's buffer is reused and after the vector holding it grows.
TEST(HeldRecord, ACopySurvivesItsSourceAndMoves) {
  std::vector<HeldRecord> held;
  {
    Record buffer = record_of(R"j({"function": "f", "func_call_id": "first", "type": "function_call (pre)", "process_id": 1, "thread_id": 2, "time": 5})j");
    held.emplace_back(buffer, false);
    buffer = record_of(R"j({"function": "f", "func_call_id": "second", "type": "function_call (pre)", "process_id": 1, "thread_id": 2, "time": 6})j");
  }
  for (int i = 0; i < 100; ++i) held.push_back(held.front());  // reallocations move every element
  for (const HeldRecord& h : held) EXPECT_EQ(h->func_call_id(), "first");
  HeldRecord moved = std::move(held.back());
  EXPECT_EQ(moved->func_call_id(), "first");
  HeldRecord assigned;
  assigned = held.front();
  EXPECT_EQ(assigned->time, 5);
}
