// The memo of shared field sets (check/online/shared_fields_memo.h): made once per set, found by its
// payload in whatever order it is asked for, its bytes kept with it, and a set nothing else holds any
// more dropped when the table fills.
#include "check/online/shared_fields_memo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace traincheck;

namespace {

Value field_set(int64_t i) { return Value::object({Member{intern_key("attributes.data"), Value::integer(i)}}); }

int64_t field_of(const Value& v) { return v.as_object().at(0).value.as_int(); }

std::string bytes_of(int64_t i) { return std::string(1, '<').append(std::to_string(i)).append(1, '>'); }

// The value and bytes derived from a set: its field times ten, and the field as text.
int64_t derive(const Value& v, std::string& bytes) {
  bytes += bytes_of(field_of(v));
  return field_of(v) * 10;
}

}  // namespace

TEST(SharedFieldsMemo, EachFieldSetIsDerivedOnceAndFoundByItsPayload) {
  SharedFieldsMemo<int64_t> memo;
  int made = 0;
  auto counted = [&](const Value& v, std::string& bytes) {
    ++made;
    return derive(v, bytes);
  };
  const Value a = field_set(1), b = field_set(2), a_again = field_set(1);  // equal to a, another payload
  EXPECT_EQ(memo.find(a, counted).value, 10);
  EXPECT_EQ(memo.find(b, counted).value, 20);
  const Value copy_of_a = a;
  const auto found = memo.find(copy_of_a, counted);
  EXPECT_EQ(found.value, 10);
  EXPECT_EQ(found.bytes, "<1>");
  EXPECT_EQ(made, 2);
  EXPECT_EQ(memo.find(a_again, counted).value, 10);
  EXPECT_EQ(made, 3);  // by payload, not by content
  EXPECT_EQ(memo.size(), 3u);
}

TEST(SharedFieldsMemo, SetsAskedForInAnyOrderGetTheirOwnValueAndBytes) {
  // The memo tries the set after the last one found first: asked in another order than they were made
  // (a step whose records come in a new order, sets skipped, asked twice), each still gets its own.
  SharedFieldsMemo<int64_t> memo;
  std::vector<Value> sets;
  for (int64_t i = 0; i < 300; ++i) sets.push_back(field_set(i));
  for (const Value& v : sets) memo.find(v, derive);
  std::vector<size_t> order;
  for (size_t i = 0; i < sets.size(); ++i) order.insert(order.end(), {i, i, (i * 7) % sets.size()});
  std::shuffle(order.begin() + 300, order.end(), std::mt19937(42));
  int made = 0;
  for (size_t i : order) {
    const auto found = memo.find(sets[i], [&](const Value& v, std::string& bytes) {
      ++made;
      return derive(v, bytes);
    });
    ASSERT_EQ(found.value, static_cast<int64_t>(i) * 10) << "set " << i;
    ASSERT_EQ(found.bytes, bytes_of(static_cast<int64_t>(i))) << "set " << i;
  }
  EXPECT_EQ(made, 0);
}

TEST(SharedFieldsMemo, FieldSetsOnlyItHoldsAreDroppedWhenTheTableFillsTheOthersKeepTheirBytes) {
  SharedFieldsMemo<int64_t> memo;
  std::vector<Value> held;
  for (int64_t i = 0; i < 400; ++i) {
    held.push_back(field_set(i));
    memo.find(held.back(), derive);
  }
  // Every other one of the first 200 and all from 200 on are now held by the memo alone (300).
  std::vector<Value> kept;
  for (int64_t i = 0; i < 200; i += 2) kept.push_back(held[static_cast<size_t>(i)]);
  held.clear();
  for (int64_t i = 0; i < 200; ++i) memo.find(field_set(1000 + i), derive);  // fills past half of 1024
  // The 300 were dropped at the refill; the 100 still held, and the new ones made since, are kept.
  EXPECT_LE(memo.size(), 100u + 200u);
  EXPECT_GE(memo.size(), 100u);
  int made = 0;
  for (size_t k = 0; k < kept.size(); ++k) {
    const auto found = memo.find(kept[k], [&](const Value& v, std::string& bytes) {
      ++made;
      return derive(v, bytes);
    });
    EXPECT_EQ(found.value, static_cast<int64_t>(2 * k) * 10);
    EXPECT_EQ(found.bytes, bytes_of(static_cast<int64_t>(2 * k)));  // its bytes moved with it, not another's
  }
  EXPECT_EQ(made, 0);  // the held ones were kept across it
}
