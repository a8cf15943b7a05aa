// replay_check (relations/replay_check.h), the offline driver of a relation's online check: it feeds the
// records the check names, in the store's order, then the end of the trace; names a violation's records
// by their store index; orders violations by the record that shows each (verdicts given at the end of
// the trace keep their place); counts the violations a check only counts; takes the check's triggered.
#include "relations/replay_check.h"

#include <gtest/gtest.h>

#include "call_trace_text.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

// Reports every call of `fn` at its post ([pre, post]), except the first, reported at the end of the
// trace ([its pre]); and one counted-only violation at the end.
class ReportingCheck final : public OnlineCheck {
 public:
  explicit ReportingCheck(std::string fn) : fn_(std::move(fn)) {}
  std::vector<Name> seen;  // functions of the records fed, in order
  void on_record(const Record& r, std::vector<OnlineViolation>& violations) override {
    seen.push_back(r.function);
    if (r.function != fn_) return;
    if (r.type == RecordType::FunctionPre) {
      pre_ = r;
      if (!first_) first_ = r;
      return;
    }
    triggered_ = true;
    if (pre_ && pre_->func_call_id() != first_->func_call_id()) violations.push_back(OnlineViolation{{*pre_, r}});
  }
  void on_trace_end(std::vector<OnlineViolation>& violations) override {
    if (first_) violations.push_back(OnlineViolation{{*first_}});
    OnlineViolation counted;
    counted.unwritten = 3;
    violations.push_back(counted);
  }
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override {
    OnlineInterest i;
    i.all_records = false;
    i.functions = {fn_};
    return i;
  }

 private:
  std::string fn_;
  std::optional<Record> pre_, first_;
  bool triggered_ = false;
};

}  // namespace

TEST(ReplayCheck, FeedsTheNamedCallsInOrderAndNamesViolationsByStoreIndexInTraceOrder) {
  CallTraceText t;
  t.call("f", 0, "");
  t.call("g", 0, "");
  t.call("f", 1, "");
  t.call("f", 2, "");
  const TraceStore trace("t", read_trace_text("t", t.text));
  ReportingCheck check("f");
  const Invariant unconditional;
  const CheckResult r = replay_check(trace, unconditional, check, CheckOptions{});
  // g's records are never fed.
  EXPECT_EQ(check.seen, std::vector<Name>(6, Name("f")));
  EXPECT_TRUE(r.triggered);
  // Records 0..7 in time order: f(0,1) g(2,3) f(4,5) f(6,7). The first call's end-of-trace violation
  // comes first, as its record does.
  ASSERT_EQ(r.violations.size(), 3u);
  EXPECT_EQ(r.violations[0].records, (std::vector<uint32_t>{0}));
  EXPECT_EQ(r.violations[1].records, (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(r.violations[2].records, (std::vector<uint32_t>{6, 7}));
  EXPECT_EQ(r.violation_count, 3u + 3u);  // the counted-only three too
  for (const Violation& v : r.violations)
    for (uint32_t i : v.records) EXPECT_EQ(trace.record(i).function, "f");
}

TEST(ReplayCheck, KeepsTheFirstMaxViolationsInTraceOrder) {
  CallTraceText t;
  for (int s = 0; s < 5; ++s) t.call("f", s, "");
  const TraceStore trace("t", read_trace_text("t", t.text));
  ReportingCheck check("f");
  CheckOptions options;
  options.max_violations = 2;
  const CheckResult r = replay_check(trace, Invariant{}, check, options);
  ASSERT_EQ(r.violations.size(), 2u);
  EXPECT_EQ(r.violations[0].records, (std::vector<uint32_t>{0}));  // the end-of-trace one, first in the trace
  EXPECT_EQ(r.violations[1].records, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(r.violation_count, 5u + 3u);
}

namespace {

// Records every state record it is fed, as (var_name, attributes.x); names var_attribute "x" (and, when
// given, one variable).
class StateStartsCheck final : public OnlineCheck {
 public:
  explicit StateStartsCheck(std::string var_name) : var_name_(std::move(var_name)) {}
  std::vector<std::pair<std::string, int64_t>> seen;
  void on_record(const Record& r, std::vector<OnlineViolation>&) override {
    if (r.type != RecordType::StateChange) return;
    const Value* x = r.get(intern_key("attributes.x"));
    seen.emplace_back(std::string(r.var_name), x ? x->as_int() : -1);
  }
  OnlineInterest interest() const override {
    OnlineInterest i;
    i.all_records = false;
    i.var_types = {"T"};
    i.var_attribute = "x";
    i.var_name = var_name_;
    return i;
  }

 private:
  std::string var_name_;
};

std::string state_line(const char* name, int x, int time) {
  return std::string(R"({"var_name":")") + name + R"(","var_type":"T","process_id":1,"thread_id":1,"meta_vars":{"step":1},)" +
         R"("type":"state_change","attributes":{"x":)" + std::to_string(x) + R"(},"time":)" + std::to_string(time) + "}\n";
}

}  // namespace

// A check that acts on one attribute's changes is fed the first record of each of its states, in time
// order, and only its variable's when it names one: what it would act on if fed every record.
TEST(ReplayCheck, FeedsAnAttributesStateStartsOnlyWhenTheCheckNamesIt) {
  std::string text;
  int time = 0;
  for (int x : {1, 1, 2, 2, 2, 1}) {
    text += state_line("a", x, ++time);
    text += state_line("b", 7, ++time);  // never changes: one state
  }
  const TraceStore trace("t", read_trace_text("t", text));
  const Invariant unconditional;
  StateStartsCheck every("");
  replay_check(trace, unconditional, every, CheckOptions{});
  EXPECT_EQ(every.seen, (std::vector<std::pair<std::string, int64_t>>{{"a", 1}, {"b", 7}, {"a", 2}, {"a", 1}}));
  StateStartsCheck only_a("a");
  replay_check(trace, unconditional, only_a, CheckOptions{});
  EXPECT_EQ(only_a.seen, (std::vector<std::pair<std::string, int64_t>>{{"a", 1}, {"a", 2}, {"a", 1}}));
}
