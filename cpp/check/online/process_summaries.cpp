#include "check/online/process_summaries.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "trace/json_parse.h"
#include "trace/key_table.h"

namespace traincheck {

namespace {

namespace fs = std::filesystem;

Value optional_int_value(const std::optional<int64_t>& n) { return n ? Value::integer(*n) : Value::null(); }

std::optional<int64_t> optional_int_of(const Value* v) {
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
                               {"first_step", optional_int_value(r.row.first_step)},
                               {"last_step", optional_int_value(r.row.last_step)},
                               {"count", Value::integer(static_cast<int64_t>(r.row.count))},
                               {"held_on_programs", optional_int_value(r.row.held_on_programs)},
                               {"examples", optional_int_value(r.row.examples)}}));
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
        row.held_on_programs = optional_int_of(r.find("held_on_programs"));
        row.examples = optional_int_of(r.find("examples"));
      }
      widen(row.first_step, optional_int_of(r.find("first_step")), true);
      widen(row.last_step, optional_int_of(r.find("last_step")), false);
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

namespace {

uint64_t count_field(const Value& summary, const char* name) {
  const Value* v = summary.find(name);
  return v && v->is_int() && v->as_int() > 0 ? static_cast<uint64_t>(v->as_int()) : 0;
}

void add_strings(const Value& summary, const char* name, std::set<std::string>& into) {
  const Value* v = summary.find(name);
  if (v == nullptr || !v->is_array()) return;
  for (const Value& s : v->as_array())
    if (s.is_string()) into.insert(s.as_string());
}

// Keeps in `into` the invariants this summary could not evaluate either (the first summary sets it). A
// summary without the field (an older collector) leaves it as it is.
void intersect_unevaluated(const Value& summary, std::optional<std::map<std::string, std::string>>& into) {
  const Value* v = summary.find("unevaluated");
  if (v == nullptr || !v->is_object()) return;
  std::map<std::string, std::string> here;
  for (const Member& m : v->as_object())
    if (m.value.is_string()) here.emplace(std::string(key_name(m.key)), m.value.as_string());
  if (!into) {
    into = std::move(here);
    return;
  }
  std::erase_if(*into, [&](const auto& entry) { return !here.count(entry.first); });
}

// "6 invariants not evaluated: no torch.nn.Parameter state recorded (6)", reasons by count, most first.
std::string unevaluated_note(const std::map<std::string, std::string>& unevaluated) {
  std::map<std::string, size_t> by_reason;
  for (const auto& [identity, reason] : unevaluated) ++by_reason[reason];
  std::vector<std::pair<std::string, size_t>> reasons(by_reason.begin(), by_reason.end());
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out = std::to_string(unevaluated.size()) + (unevaluated.size() == 1 ? " invariant" : " invariants") +
                    " not evaluated:";
  for (size_t i = 0; i < reasons.size(); ++i)
    out += (i ? ";" : "") + std::string(" ") + reasons[i].first + " (" + std::to_string(reasons[i].second) + ")";
  return out;
}

uint64_t non_blank_lines(const fs::path& path) {
  std::ifstream in(path);
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
  return n;
}

}  // namespace

RunOnlineCheckReport run_online_check_report(const std::string& folder, size_t max_rows, std::optional<int> exit_code) {
  RunOnlineCheckReport report;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return report;
  report.checked = true;
  std::vector<fs::path> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("summary_") && name.ends_with(".json")) paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> texts;
  std::set<std::string> violated, triggered;
  std::string version_note;  // the same in every process (each checks the same set on the same versions)
  // Invariants no process could evaluate (identity -> reason): those of every summary's "unevaluated".
  std::optional<std::map<std::string, std::string>> unevaluated;
  uint64_t violations = 0, checked = 0, not_checked = 0;
  for (const fs::path& path : paths) {
    std::string text, error;
    Value summary;
    if (!read_file(path.string(), text, error) || !parse_json(text, summary, error) || !summary.is_object()) continue;
    violations += count_field(summary, "violations");
    checked = std::max(checked, count_field(summary, "checked"));
    not_checked = std::max(not_checked, count_field(summary, "not_checked"));
    add_strings(summary, "violated_invariants", violated);
    add_strings(summary, "triggered_invariants", triggered);
    if (const Value* note = summary.find("version_note"); note && note->is_string() && !note->as_string().empty())
      version_note = note->as_string();
    intersect_unevaluated(summary, unevaluated);
    texts.push_back(std::move(text));
  }
  const std::string failed = (fs::path(folder) / "failed.log").string();
  if (texts.empty()) {
    const std::string why = !exit_code ? "the program did not exit normally"
                            : *exit_code == 0
                                ? "the program exited normally, but the check could not start or could not write its results; "
                                  "see the warnings above"
                                : "the program ended with exit code " + std::to_string(*exit_code) + ", leaving none";
    std::error_code missing;
    report.line = fs::exists(failed, missing)  // no failed.log: no process got as far as checking
                      ? "online check: " + std::to_string(non_blank_lines(failed)) + " violations (no summary: " + why + "); see " + failed
                      : "online check: nothing checked (no summary: " + why + ")";
    return report;
  }
  const uint64_t not_evaluated = unevaluated ? std::min<uint64_t>(unevaluated->size(), checked) : 0;
  checked -= not_evaluated;
  not_checked += not_evaluated;
  const std::string counts = "(" + std::to_string(triggered.size()) + " triggered, " + std::to_string(checked) +
                             " checked, " + std::to_string(not_checked) + " not checked)";
  report.line = violations == 0 ? "online check: no violation of " + std::to_string(checked) + " checks " + counts
                                : "online check: " + std::to_string(violations) + " violations of " +
                                      std::to_string(violated.size()) + " invariants " + counts + "; see " + failed;
  if (not_evaluated > 0) report.line += "\nonline check: " + unevaluated_note(*unevaluated);
  if (!version_note.empty()) report.line += "\nonline check: " + version_note;
  report.table = format_run_violation_table(texts, max_rows);
  return report;
}

}  // namespace traincheck
