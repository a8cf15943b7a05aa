// The memo of shared field sets (check/online/shared_fields_memo.h): made once per set, found by its
// payload, and a set nothing else holds any more is dropped when the table fills.
#include "check/online/shared_fields_memo.h"

#include <gtest/gtest.h>

#include <vector>

using namespace traincheck;

namespace {

Value field_set(int64_t i) { return Value::object({Member{intern_key("attributes.data"), Value::integer(i)}}); }

}  // namespace

TEST(SharedFieldsMemo, EachFieldSetIsDerivedOnceAndFoundByItsPayload) {
  SharedFieldsMemo<int64_t> memo;
  int made = 0;
  auto derive = [&](const Value& v) {
    ++made;
    return v.as_object().at(0).value.as_int() * 10;
  };
  const Value a = field_set(1), b = field_set(2), a_again = field_set(1);  // equal to a, another payload
  EXPECT_EQ(memo.find(a, derive), 10);
  EXPECT_EQ(memo.find(b, derive), 20);
  const Value copy_of_a = a;
  EXPECT_EQ(memo.find(copy_of_a, derive), 10);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(memo.find(a_again, derive), 10);
  EXPECT_EQ(made, 3);  // by payload, not by content
  EXPECT_EQ(memo.size(), 3u);
}

TEST(SharedFieldsMemo, FieldSetsOnlyItHoldsAreDroppedWhenTheTableFills) {
  SharedFieldsMemo<int64_t> memo;
  auto derive = [](const Value& v) { return v.as_object().at(0).value.as_int(); };
  std::vector<Value> held;
  for (int64_t i = 0; i < 400; ++i) {
    held.push_back(field_set(i));
    memo.find(held.back(), derive);
  }
  held.erase(held.begin() + 100, held.end());  // 300 now held by the memo alone
  for (int64_t i = 0; i < 200; ++i) memo.find(field_set(1000 + i), derive);  // fills past half of 1024
  // The 300 were dropped at the refill; the 100 still held, and the new ones made since, are kept.
  EXPECT_LE(memo.size(), 100u + 200u);
  EXPECT_GE(memo.size(), 100u);
  int made = 0;
  for (const Value& v : held) memo.find(v, [&](const Value& x) { ++made; return derive(x); });
  EXPECT_EQ(made, 0);  // the held ones were kept across it
}
