#include "check/result_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "check/violation_summary.h"

namespace traincheck {

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  out << text;
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

void append_entry(std::string& out, const Value& v) {
  append_value_json(out, v, JsonStyle::Indented, 4);
  out += '\n';
}

}  // namespace

Value build_violations_summary(const TraceCheckReport& report) { return build_violations_summary(violation_summary_rows(report)); }

Value build_violations_summary(const std::vector<ViolationSummaryRow>& rows) {
  auto opt = [](const std::optional<int64_t>& x) { return x ? Value::integer(*x) : Value::null(); };
  Array list;
  for (const ViolationSummaryRow& r : rows)
    list.push_back(make_object({{"display_name", Value::string(r.label)},
                                {"relation_type", Value::string(r.relation)},
                                {"first_step", opt(r.first_step)},
                                {"last_step", opt(r.last_step)},
                                {"occurrences", Value::integer(static_cast<int64_t>(r.count))}}));
  return make_object({{"first_violation_step", opt(first_violation_step(rows))},
                      {"distinct_invariants_violated", Value::integer(static_cast<int64_t>(rows.size()))},
                      {"violations", Value::array(std::move(list))}});
}

void write_violations_summary_file(const std::string& path, const std::vector<ViolationSummaryRow>& rows) {
  std::string summary;
  append_value_json(summary, build_violations_summary(rows), JsonStyle::Indented, 4);
  summary += '\n';
  write_text(path, summary);
}

namespace {

// A log written entry by entry: 100k violated invariants made a 3.9 GB failed.log, built in memory whole.
class EntryLog {
 public:
  explicit EntryLog(const std::filesystem::path& path) : path_(path), out_(path, std::ios::binary) {
    if (!out_) throw std::runtime_error(path.string() + ": cannot open for writing");
  }
  void add(const Value& v) {
    buffer_.clear();
    append_entry(buffer_, v);
    out_ << buffer_;
    if (!out_) throw std::runtime_error(path_.string() + ": write failed");
  }
  void close() {
    out_.close();
    if (!out_) throw std::runtime_error(path_.string() + ": write failed");
  }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::string buffer_;  // one entry; reused
};

}  // namespace

void write_trace_results(const std::string& dir, const TraceCheckReport& report) {
  std::filesystem::create_directories(dir);
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
  write_violations_summary_file((base / "violations_summary.json").string(), violation_summary_rows(report));
}

}  // namespace traincheck
