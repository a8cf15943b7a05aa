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
