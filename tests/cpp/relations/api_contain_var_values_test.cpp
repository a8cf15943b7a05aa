#include "relations/api_contain_var_values.h"

#include <gtest/gtest.h>

#include <sstream>

#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

// One parent call per element of `values`, each changing w.grad from the previous value to it.
TraceStore trace_of(const std::vector<std::string>& values) {
  std::string text;
  int64_t time = 1;
  auto state = [&](const std::string& v) {
    text += "{\"var_name\":\"w\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":7,\"thread_id\":1,\"meta_vars\":{\"step\":1},"
            "\"type\":\"state_change\",\"attributes\":{\"grad\":" + v + "},\"time\":" + std::to_string(time++) + "}\n";
  };
  auto api = [&](const std::string& id, const char* type) {
    text += "{\"func_call_id\":\"" + id + "\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1},\"type\":\"" + type +
            "\",\"function\":\"step\",\"time\":" + std::to_string(time++) + "}\n";
  };
  state("0");
  for (size_t i = 0; i < values.size(); ++i) {
    api("c" + std::to_string(i), "function_call (pre)");
    state(values[i]);
    api("c" + std::to_string(i), "function_call (post)");
  }
  std::ostringstream quiet;
  ReadOptions options;
  options.warnings = &quiet;
  return TraceStore("t", read_trace_text("t.log", text, options), {}, &quiet);
}

struct Pair {
  std::string pre, post;
  std::vector<uint32_t> positions;
  bool operator==(const Pair&) const = default;
};

std::vector<Pair> distinct_pairs(const TraceStore& t) {
  VarValueChanges changes;
  const std::vector<uint32_t>& calls = t.threads()[0].calls;
  for (uint32_t pos = 0; pos < calls.size(); ++pos)
    for (const VarChange& c : t.contained_var_changes(t.calls()[calls[pos]])) changes.add(t, c, pos);
  std::vector<Pair> out;
  for (const VarValueChanges::Distinct& d : changes.distinct(t))
    out.push_back({to_json(*d.pre), to_json(*d.post), {d.positions.begin(), d.positions.end()}});
  return out;
}

}  // namespace

// Pairs are told apart by their JSON text and come in the order of "pre\x1fpost": 10 sorts before 9,
// "2\x1f0" before "2.0\x1f9", and 0 -> 2.0 is its own pair (2.0 is written as a float).
TEST(VarValueChanges, DistinctPairsInKeyOrderWithTheirCalls) {
  const TraceStore t = trace_of({"9", "0", "9", "0", "10", "2", "0", "2.0", "9"});
  const std::vector<Pair> got = distinct_pairs(t);
  const std::vector<Pair> want = {
      {"0", "10", {4}}, {"0", "2.0", {7}}, {"0", "9", {0, 2}}, {"10", "2", {5}},
      {"2", "0", {6}},  {"2.0", "9", {8}}, {"9", "0", {1, 3}},
  };
  EXPECT_EQ(got, want);
}

TEST(VarValueChanges, NoChangesNoPairs) {
  VarValueChanges changes;
  const TraceStore t = trace_of({});
  EXPECT_TRUE(changes.distinct(t).empty());
}
