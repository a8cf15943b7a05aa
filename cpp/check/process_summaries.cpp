#include "check/process_summaries.h"

#include <algorithm>
#include <map>

#include "trace/json_parse.h"

namespace traincheck {

namespace {

Value step_value(const std::optional<int64_t>& step) { return step ? Value::integer(*step) : Value::null(); }

std::optional<int64_t> step_of(const Value* v) {
  if (v == nullptr || !v->is_int()) return std::nullopt;
  return v->as_int();
}

void widen(std::optional<int64_t>& into, const std::optional<int64_t>& other, bool earliest) {
  if (!other) return;
  if (!into || (earliest ? *other < *into : *other > *into)) into = other;
}

}  // namespace

Value process_violation_rows_value(const std::vector<ProcessViolationRow>& rows) {
  Array out;
  for (const ProcessViolationRow& r : rows)
    out.push_back(make_object({{"invariant", Value::string(r.identity)},
                               {"label", Value::string(r.row.label)},
                               {"relation", Value::string(r.row.relation)},
                               {"first_step", step_value(r.row.first_step)},
                               {"last_step", step_value(r.row.last_step)},
                               {"count", Value::integer(static_cast<int64_t>(r.row.count))}}));
  return Value::array(std::move(out));
}

std::vector<ViolationSummaryRow> merge_process_summaries(const std::vector<Value>& summaries) {
  std::map<std::string, ViolationSummaryRow> by_invariant;
  for (const Value& summary : summaries) {
    const Value* rows = summary.is_object() ? summary.find("violation_summary") : nullptr;
    if (rows == nullptr || !rows->is_array()) continue;
    for (const Value& r : rows->as_array()) {
      if (!r.is_object()) continue;
      const Value* identity = r.find("invariant");
      const Value* label = r.find("label");
      const Value* count = r.find("count");
      if (!identity || !identity->is_string() || !label || !label->is_string() || !count || !count->is_int()) continue;
      auto [it, inserted] = by_invariant.try_emplace(identity->as_string());
      ViolationSummaryRow& row = it->second;
      if (inserted) {
        row.label = label->as_string();
        const Value* relation = r.find("relation");
        if (relation && relation->is_string()) row.relation = relation->as_string();
      }
      widen(row.first_step, step_of(r.find("first_step")), true);
      widen(row.last_step, step_of(r.find("last_step")), false);
      row.count += static_cast<uint64_t>(std::max<int64_t>(0, count->as_int()));
    }
  }
  std::vector<ViolationSummaryRow> out;
  for (auto& [identity, row] : by_invariant) out.push_back(std::move(row));
  sort_by_first_step(out);
  return out;
}

std::string format_run_violation_table(const std::vector<std::string>& summary_texts, size_t max_rows) {
  std::vector<Value> summaries;
  for (const std::string& text : summary_texts) {
    Value v;
    std::string error;
    if (parse_json(text, v, error)) summaries.push_back(std::move(v));
  }
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  return rows.empty() ? std::string() : format_violation_summary(rows, max_rows);
}

}  // namespace traincheck
