#include "pack/vet_report.h"

#include <map>

#include "common/json_writer.h"

namespace traincheck {

namespace {

void append_names(std::string& out, const std::vector<std::string>& names) {
  out += '[';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    append_json_string(out, names[i]);
  }
  out += ']';
}

}  // namespace

std::string vet_report_json(const VetResult& result, const std::vector<VetProgram>& programs, const VetRule& rule) {
  std::string out = "{\"rule\": {\"min_programs\": ";
  append_json_uint(out, rule.min_programs);
  out += ", \"min_families\": ";
  append_json_uint(out, rule.min_families);
  out += ", \"max_relation_loo_share\": " + std::to_string(rule.max_relation_loo_share);
  out += "},\n \"programs\": ";
  append_json_uint(out, programs.size());
  out += ", \"candidates\": ";
  append_json_uint(out, result.decisions.size());
  out += ", \"kept\": ";
  append_json_uint(out, result.kept().size());
  out += ",\n \"by_class\": {";
  bool first = true;
  for (const auto& [name, t] : result.by_class) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    append_json_string(out, name);
    out += ": {\"candidates\": " + std::to_string(t.candidates) + ", \"kept\": " + std::to_string(t.kept) +
           ", \"device_bound\": " + std::to_string(t.device_bound) +
           ", \"step_bound\": " + std::to_string(t.step_bound) +
           ", \"violated\": " + std::to_string(t.violated) + ", \"too_few_programs\": " +
           std::to_string(t.too_few_programs) + ", \"one_family\": " + std::to_string(t.one_family) +
           ", \"seen_once_per_run\": " + std::to_string(t.seen_once_per_run) +
           ", \"class_excluded\": " + std::to_string(t.class_excluded) +
           ", \"not_checked\": " + std::to_string(t.not_checked) +
           ", \"loo_programs_alarmed\": " + std::to_string(t.loo_programs_alarmed) +
           ", \"generalises\": " + (t.generalises ? "true" : "false") + "}";
  }
  // Rule (c) of the shipped pack: per program, the identities it violates when vetted without it.
  out += "},\n \"leave_one_out\": {";
  for (size_t i = 0; i < result.leave_one_out.size(); ++i) {
    out += i ? ",\n  " : "\n  ";
    append_json_string(out, result.leave_one_out[i].program);
    out += ": ";
    std::vector<std::string> identities;
    for (const Invariant* inv : result.shipped_leave_one_out(i)) identities.push_back(inv->identity());
    append_names(out, identities);
  }
  out += "},\n \"decisions\": [";
  for (size_t i = 0; i < result.decisions.size(); ++i) {
    const VetDecision& d = result.decisions[i];
    out += i ? ",\n  " : "\n  ";
    out += "{\"relation\": ";
    append_json_string(out, d.invariant->relation);
    out += ", \"class\": ";
    append_json_string(out, hypothesis_class(*d.invariant));
    out += ", \"description\": ";
    append_json_string(out, d.invariant->text_description.str());
    out += ", \"verdict\": ";
    append_json_string(out, vet_verdict_name(d.verdict));
    out += ", \"learned_by\": " + std::to_string(d.learned_by) + ", \"passed_on\": ";
    append_names(out, d.passed_on);
    out += ", \"violated_on\": ";
    append_names(out, d.violated_on);
    out += ", \"families_passed\": ";
    append_names(out, std::vector<std::string>(d.families_passed.begin(), d.families_passed.end()));
    out += "}";
  }
  out += "]}\n";
  return out;
}

namespace {

void append_counts(std::string& out, const std::map<std::string, size_t>& counts) {
  out += '{';
  bool first = true;
  for (const auto& [name, n] : counts) {
    if (!first) out += ", ";
    first = false;
    append_json_string(out, name);
    out += ": ";
    append_json_uint(out, n);
  }
  out += '}';
}

}  // namespace

std::string extension_report_json(const PackExtension& extension, const std::vector<VetProgram>& added) {
  std::map<std::string, size_t> by_relation, by_class;
  for (const Invariant& inv : extension.pack) {
    ++by_relation[inv.relation];
    ++by_class[hypothesis_class(inv)];
  }
  std::string out = "{\"added_programs\": [";
  for (size_t i = 0; i < added.size(); ++i) {
    if (i) out += ", ";
    append_json_string(out, added[i].name);
  }
  out += "], \"kept\": ";
  append_json_uint(out, extension.pack.size());
  out += ", \"kept_by_relation\": ";
  append_counts(out, by_relation);
  out += ", \"kept_by_class\": ";
  append_counts(out, by_class);
  out += ", \"dropped\": [";
  for (size_t i = 0; i < extension.dropped.size(); ++i) {
    const auto& [inv, programs] = extension.dropped[i];
    out += i ? ", {" : "{";
    out += "\"text_description\": ";
    append_json_string(out, inv.text_description.str());
    out += ", \"relation\": ";
    append_json_string(out, inv.relation);
    out += ", \"class\": ";
    append_json_string(out, hypothesis_class(inv));
    out += ", \"violated_on\": [";
    for (size_t k = 0; k < programs.size(); ++k) {
      if (k) out += ", ";
      append_json_string(out, programs[k]);
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace traincheck
