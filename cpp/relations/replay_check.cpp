#include "relations/replay_check.h"

#include <algorithm>

#include "common/assert.h"

namespace traincheck {

namespace {

// The records of `function`'s calls (pre, and post or exception), in the store's order. Calls come by
// start time, so their pre-records are in order already, and their ends nearly (only calls of the
// function nested in one another come out of order): no full sort of every call's records.
std::vector<uint32_t> records_of_calls(const TraceStore& trace, std::string_view function) {
  std::vector<uint32_t> pres, ends;
  for (uint32_t c : trace.calls_of(function)) {
    const CallEvent& call = trace.calls()[c];
    pres.push_back(call.pre);
    if (call.post != kNone) ends.push_back(call.post);
  }
  if (!std::is_sorted(pres.begin(), pres.end())) std::sort(pres.begin(), pres.end());
  if (!std::is_sorted(ends.begin(), ends.end())) std::sort(ends.begin(), ends.end());
  std::vector<uint32_t> out(pres.size() + ends.size());
  std::merge(pres.begin(), pres.end(), ends.begin(), ends.end(), out.begin());
  return out;
}

// The records a check wants, in the store's order, one at a time: a list (the calls of the functions it
// names, merged; or a scan of its var types' state records) merged on the fly with its attribute's state
// starts, one cursor per history in a min-heap by record index, so those (half a million in a 1M-line
// trace for a parameter type) are never one array.
class WantedRecords {
 public:
  WantedRecords(const TraceStore& trace, const OnlineInterest& interest) {
    if (interest.all_records) {
      list_.resize(trace.records().size());
      for (uint32_t i = 0; i < list_.size(); ++i) list_[i] = i;
      return;
    }
    if (!interest.var_types.empty() && !interest.var_attribute.empty()) {
      // Only where the attribute starts a state: each state's first record, from the store's histories.
      for (const VarInstance& var : trace.var_instances()) {
        if (std::find(interest.var_types.begin(), interest.var_types.end(), var.var_type) == interest.var_types.end()) continue;
        if (!interest.var_name.empty() && var.var_name != interest.var_name) continue;
        const AttrHistory* attr = var.attr(interest.var_attribute);
        if (attr != nullptr && !attr->states.empty()) starts_.push_back(StateStarts{attr, 0, attr->records_of(0).front()});
      }
      std::make_heap(starts_.begin(), starts_.end(), later);
    } else if (!interest.var_types.empty()) {
      // State records of the var types, and the calls below merged in.
      for (uint32_t i = 0; i < trace.records().size(); ++i) {
        const Record& r = trace.record(i);
        if (r.type == RecordType::StateChange &&
            std::find(interest.var_types.begin(), interest.var_types.end(), r.var_type.view()) != interest.var_types.end())
          list_.push_back(i);
      }
    }
    std::vector<std::string_view> functions(interest.functions.begin(), interest.functions.end());
    std::sort(functions.begin(), functions.end());
    functions.erase(std::unique(functions.begin(), functions.end()), functions.end());
    for (std::string_view function : functions) {
      std::vector<uint32_t> calls = records_of_calls(trace, function);
      if (list_.empty()) {
        list_ = std::move(calls);
        continue;
      }
      std::vector<uint32_t> merged(list_.size() + calls.size());
      std::merge(list_.begin(), list_.end(), calls.begin(), calls.end(), merged.begin());
      list_ = std::move(merged);
    }
  }

  // The next record's index; false once every one was given.
  bool next(uint32_t& index) {
    const bool from_list = pos_ < list_.size() && (starts_.empty() || list_[pos_] < starts_.front().head);
    if (from_list) {
      index = list_[pos_++];
      return true;
    }
    if (starts_.empty()) return false;
    std::pop_heap(starts_.begin(), starts_.end(), later);
    StateStarts& top = starts_.back();
    index = top.head;
    if (++top.state < top.history->states.size()) {
      top.head = top.history->records_of(top.state).front();
      std::push_heap(starts_.begin(), starts_.end(), later);
    } else {
      starts_.pop_back();
    }
    return true;
  }

 private:
  struct StateStarts {
    const AttrHistory* history;
    uint32_t state;
    uint32_t head;  // the record that starts `state`
  };
  static bool later(const StateStarts& a, const StateStarts& b) { return a.head > b.head; }  // a min-heap

  std::vector<uint32_t> list_;
  size_t pos_ = 0;
  std::vector<StateStarts> starts_;
};

uint64_t place_of(const Record& r) { return (static_cast<uint64_t>(r.file) << 32) | r.line; }

}  // namespace

CheckResult replay_check(const TraceStore& trace, const Invariant& invariant, OnlineCheck& check, const CheckOptions& options) {
  CheckResult result;
  WantedRecords records(trace, check.interest());
  // A violation carries copies of its records; their time, file and line find them in the store (its
  // records are in time order), only when there is a violation to name.
  const uint32_t total = static_cast<uint32_t>(trace.records().size());
  auto index_of = [&](const Record& copy) {
    uint32_t lo = 0, hi = total;  // the first record not before copy.time
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (trace.record(mid).time < copy.time) lo = mid + 1;
      else hi = mid;
    }
    for (uint32_t i = lo; i < total && trace.record(i).time == copy.time; ++i)
      if (place_of(trace.record(i)) == place_of(copy)) return i;
    TC_ASSERT(false, "a violation's records are records of the store");
    return kNone;  // (without assertions: the record is left out of the violation)
  };
  // The first max_violations in trace order of the record that shows each (a check judges some calls
  // only at the end of the trace: a thread's only call of A, for FunctionLead). Kept bounded: whenever
  // twice as many are held, the first max_violations of them stay; a violation found later that belongs
  // among the first is still taken, so the result is that of sorting them all.
  const size_t max_kept = options.max_violations;
  std::vector<Violation> kept;
  auto first_in_trace_order = [&] {
    std::stable_sort(kept.begin(), kept.end(), [](const Violation& a, const Violation& b) { return a.records[0] < b.records[0]; });
    if (kept.size() > max_kept) kept.resize(max_kept);
  };

  const bool enrich = !context_managers_named(invariant).empty();
  // The store's records last as long as the check; records given context managers are copies, one
  // buffer reused.
  if (!enrich) check.feed_lasting_records();
  Record enriched;
  std::vector<OnlineViolation> found;
  auto take = [&] {
    for (const OnlineViolation& v : found) {
      if (v.records.empty()) {  // counted, not kept (OnlineViolation::unwritten)
        result.violation_count += v.unwritten;
        continue;
      }
      ++result.violation_count;
      Violation violation;
      for (const Record& r : v.records)
        if (const uint32_t i = index_of(r); i != kNone) violation.records.push_back(i);
      if (!violation.records.empty()) kept.push_back(std::move(violation));
    }
    found.clear();
    if (kept.size() >= 2 * std::max<size_t>(max_kept, 1)) first_in_trace_order();
  };
  // Lost records reach the check where they were lost: before the first record after the one they follow.
  const std::vector<TraceGap>& gaps = trace.gaps();
  size_t next_gap = 0;
  while (next_gap < gaps.size() && gaps[next_gap].after == kNone) ++next_gap;  // nothing before them
  auto losses_until = [&](uint32_t index) {
    for (; next_gap < gaps.size() && gaps[next_gap].after < index; ++next_gap)
      check.on_records_lost(gaps[next_gap].process_id, gaps[next_gap].thread_id);
  };
  for (uint32_t i = 0; records.next(i);) {
    losses_until(i);
    const Record& r = trace.record(i);
    if (enrich) {
      std::vector<Field> managers = trace.context_managers_at(r.time, r.process_id, r.thread_id);
      if (!managers.empty()) {
        enriched = r;
        for (Field& f : managers) enriched.set(f.key, std::move(f.value));
        check.on_record(enriched, found);
        take();
        continue;
      }
    }
    check.on_record(r, found);
    take();
  }
  losses_until(kNone);
  check.on_trace_end(found);
  take();
  first_in_trace_order();
  result.violations = std::move(kept);
  result.triggered = check.triggered();
  return result;
}

}  // namespace traincheck
