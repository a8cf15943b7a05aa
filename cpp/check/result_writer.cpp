#include "check/result_writer.h"

#include "trace/lost_records.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "check/violation_summary.h"
#include "common/output_file.h"
#include "trace/lost_records.h"

namespace traincheck {

namespace {

void append_entry(std::string& out, const Value& v) {
  append_value_json(out, v, JsonStyle::Indented, 4);
  out += '\n';
}

}  // namespace

Value build_violations_summary(const TraceCheckReport& report) {
  return build_violations_summary(violation_summary_rows(report), relation_checks_value(report),
                                  report.trace->records_lost()
                                      ? incomplete_trace_value(report.trace->records_lost(), report.trace->files_with_lost_records())
                                      : Value());
}

Value incomplete_trace_value(uint64_t records_lost, const std::vector<std::string>& files) {
  Array names;
  for (const std::string& f : files) names.push_back(Value::string(f));
  return make_object({{"records_lost", Value::integer(static_cast<int64_t>(records_lost))},
                      {"files", Value::array(std::move(names))},
                      {"note", Value::string(incomplete_trace_line(records_lost, files))}});
}

std::map<int64_t, int64_t> invariants_per_step(const std::vector<ViolationSummaryRow>& rows) {
  std::map<int64_t, int64_t> invariants_at;
  for (const ViolationSummaryRow& r : rows)
    for (int64_t step : r.steps) ++invariants_at[step];
  return invariants_at;
}

Value build_violations_summary(const std::vector<ViolationSummaryRow>& rows, const Value& checks, const Value& incomplete) {
  auto opt = [](const std::optional<int64_t>& x) { return x ? Value::integer(*x) : Value::null(); };
  auto stage = [](const std::string& s) { return s.empty() ? Value::null() : Value::string(s); };
  Array list;
  for (const ViolationSummaryRow& r : rows) {
    Array steps;
    for (int64_t step : r.steps) steps.push_back(Value::integer(step));
    Value row = make_object({{"display_name", Value::string(r.label)},
                             {"relation_type", Value::string(r.relation)},
                             {"first_step", opt(r.first_step)},
                             {"last_step", opt(r.last_step)},
                             {"occurrences", Value::integer(static_cast<int64_t>(r.count))},
                             {"first_stage", stage(r.first_stage)},
                             {"last_stage", stage(r.last_stage)},
                             {"steps", Value::array(std::move(steps))}});
    if (r.held_on_programs) {  // a pack's invariant: why to trust it (rows of other invariants stay as they were)
      Object members = row.as_object();
      members.push_back({intern_key("held_on_programs"), Value::integer(*r.held_on_programs)});
      members.push_back({intern_key("examples"), opt(r.examples)});
      row = Value::object(std::move(members));
    }
    list.push_back(std::move(row));
  }
  Array per_step;
  for (const auto& [step, n] : invariants_per_step(rows))
    per_step.push_back(make_object({{"step", Value::integer(step)}, {"invariants", Value::integer(n)}}));
  Object summary = {{intern_key("first_violation_step"), opt(first_violation_step(rows))},
                    {intern_key("distinct_invariants_violated"), Value::integer(static_cast<int64_t>(rows.size()))},
                    {intern_key("violations"), Value::array(std::move(list))},
                    {intern_key("invariants_violated_per_step"), Value::array(std::move(per_step))}};
  if (!checks.is_null()) summary.push_back({intern_key("checks"), checks});
  if (!incomplete.is_null()) summary.push_back({intern_key("incomplete_trace"), incomplete});
  return Value::object(std::move(summary));
}

Value relation_checks_value(const TraceCheckReport& report) {
  struct Counts {
    int64_t failed = 0, passed = 0, not_triggered = 0;
  };
  Counts total;
  std::map<std::string, Counts> by_relation;
  for (const InvariantOutcome& o : report.outcomes) {
    Counts& r = by_relation[o.invariant->relation];
    int64_t Counts::*field = !o.result.passed() ? &Counts::failed : o.result.triggered ? &Counts::passed : &Counts::not_triggered;
    ++(r.*field);
    ++(total.*field);
  }
  auto value = [](const Counts& c) {
    return make_object({{"failed", Value::integer(c.failed)},
                        {"passed", Value::integer(c.passed)},
                        {"not_triggered", Value::integer(c.not_triggered)}});
  };
  Object relations;
  for (const auto& [name, counts] : by_relation) relations.push_back({intern_key(name), value(counts)});
  return make_object({{"total", value(total)}, {"by_relation", Value::object(std::move(relations))}});
}

void write_violations_summary_file(const std::string& path, const std::vector<ViolationSummaryRow>& rows, const Value& checks,
                                   const Value& incomplete) {
  std::string summary;
  append_value_json(summary, build_violations_summary(rows, checks, incomplete), JsonStyle::Indented, 4);
  summary += '\n';
  write_output_file(path, summary);
}

namespace {

// A log written entry by entry: 100k violated invariants made a 3.9 GB failed.log, built in memory whole.
class EntryLog {
 public:
  explicit EntryLog(const std::filesystem::path& path) : out_(path.string()) {}
  void add(const Value& v) {
    buffer_.clear();
    append_entry(buffer_, v);
    out_.write(buffer_);
  }
  void close() { out_.close(); }

 private:
  OutputFile out_;
  std::string buffer_;  // one entry; reused
};

}  // namespace

void write_trace_results(const std::string& dir, const TraceCheckReport& report) {
  create_output_subfolder(dir);
  const TraceStore& trace = *report.trace;
  const double span = static_cast<double>(trace.end_time() - trace.start_time());
  const std::filesystem::path base(dir);
  EntryLog failed(base / "failed.log"), passed(base / "passed.log"), not_triggered(base / "not_triggered.log");
  for (const InvariantOutcome& o : report.outcomes) {
    if (!o.result.passed()) {
      Array records;
      int64_t detection = trace.start_time();
      bool first = true;
      for (const Violation& v : o.result.violations) {
        for (uint32_t r : v.records) {
          records.push_back(trace.record(r).to_value());
          // Detection time of the first violation (the one the original reports), the latest of its records.
          if (first) detection = std::max(detection, trace.record(r).time);
        }
        first = false;
      }
      const double pct = span > 0 ? static_cast<double>(detection - trace.start_time()) / span : 0.0;
      failed.add(make_object({{"invariant", o.invariant->to_value()},
                              {"display_name", Value::string(o.display_name)},  // ours: the label, for readers
                              {"check_passed", Value::boolean(false)},
                              {"triggered", Value::boolean(true)},
                              {"detection_time", Value::integer(detection)},
                              {"detection_time_percentage", Value::real(pct)},
                              {"violation_count", Value::integer(static_cast<int64_t>(o.result.violation_count))},
                              {"trace", Value::array(std::move(records))}}));
    } else {
      (o.result.triggered ? passed : not_triggered)
          .add(make_object({{"invariant", o.invariant->to_value()},
                            {"check_passed", Value::boolean(true)},
                            {"triggered", Value::boolean(o.result.triggered)}}));
    }
  }
  failed.close();
  passed.close();
  not_triggered.close();
  const TraceStore& lossy = *report.trace;
  write_violations_summary_file((base / "violations_summary.json").string(), violation_summary_rows(report),
                                relation_checks_value(report),
                                lossy.records_lost() ? incomplete_trace_value(lossy.records_lost(), lossy.files_with_lost_records()) : Value());
}

}  // namespace traincheck
