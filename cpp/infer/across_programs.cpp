#include "infer/across_programs.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "check/checker.h"
#include "common/console_text.h"

namespace traincheck {

namespace {

// "key: value" of env_dump.txt's `Arguments:` section (the script) and `Environment Variables:` one (PWD).
std::map<std::string, std::string> env_dump_fields(const std::filesystem::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    if (key == "pyscript" || key == "shscript" || key == "PWD") out.emplace(key, line.substr(colon + 2));  // first wins
  }
  return out;
}

// Candidate `c` on every trace of a program: violated on one of them is violated; passed on one (and
// violated on none) is passed.
void fold(CheckOutcome& into, CheckOutcome outcome) {
  if (outcome == CheckOutcome::Violated || into == CheckOutcome::Violated) into = CheckOutcome::Violated;
  else if (outcome == CheckOutcome::Passed) into = CheckOutcome::Passed;
}

// Rule (g)'s input: the functions called at least twice on one thread of one of the traces.
std::set<std::string> repeated_calls(const std::vector<const TraceStore*>& traces) {
  std::set<std::string> out;
  for (const TraceStore* t : traces)
    for (std::string_view function : t->functions()) {
      std::set<uint32_t> threads;
      for (uint32_t c : t->calls_of(function))
        if (!threads.insert(t->calls()[c].thread).second) {
          out.emplace(function);
          break;
        }
    }
  return out;
}

}  // namespace

std::string program_of_trace_folder(const std::string& folder) {
  const std::map<std::string, std::string> fields = env_dump_fields(std::filesystem::path(folder) / "env_dump.txt");
  std::string script;
  for (const char* key : {"pyscript", "shscript"}) {
    auto it = fields.find(key);
    if (it != fields.end() && !it->second.empty() && it->second != "None") {
      script = it->second;
      break;
    }
  }
  if (script.empty()) return "";
  std::filesystem::path path(script);
  auto pwd = fields.find("PWD");
  if (path.is_relative() && pwd != fields.end()) path = std::filesystem::path(pwd->second) / path;
  return path.lexically_normal().string();
}

AcrossProgramsResult infer_across_programs(const std::vector<ProgramTraces>& programs,
                                           const std::vector<const Relation*>& relations, const InferOptions& options,
                                           size_t min_programs) {
  if (programs.size() < 2) throw std::invalid_argument("learning across programs needs at least two programs");
  if (min_programs < 1) throw std::invalid_argument("min_programs must be at least 1");
  AcrossProgramsResult result;
  // Each program's own invariants; the first program to learn an identity gives its precondition, as
  // traincheck-check merges -i files.
  std::map<std::string, size_t> candidate_of;
  for (const ProgramTraces& p : programs) {
    if (p.traces.empty()) throw std::invalid_argument("program " + p.name + " has no trace");
    if (options.progress) *options.progress << "[infer] program " << console_text(p.name) << ": " << p.traces.size() << " trace(s)\n";
    InferResult own = infer_invariants(p.traces, relations, options);
    result.hypotheses += own.hypotheses;
    VetProgram vp;
    vp.name = p.name;
    vp.family = p.name;  // a program is its own family: rule (b) counts programs
    vp.repeated_calls = repeated_calls(p.traces);
    for (Invariant& inv : own.invariants) {
      std::string identity = inv.identity();
      vp.learned.insert(identity);
      if (candidate_of.emplace(std::move(identity), result.candidates.size()).second)
        result.candidates.push_back(std::move(inv));
    }
    for (FailedHypothesis& f : own.failed) result.failed.push_back(std::move(f));
    result.programs.push_back(std::move(vp));
  }
  std::vector<const std::string*> identity_of(result.candidates.size());
  for (const auto& [identity, c] : candidate_of) identity_of[c] = &identity;
  // Every candidate on every program's runs.
  CheckOptions check_options;
  check_options.max_violations = 0;  // whether, not where: counted, none kept
  for (size_t i = 0; i < programs.size(); ++i) {
    std::vector<CheckOutcome> folded(result.candidates.size(), CheckOutcome::NotTriggered);
    for (const TraceStore* t : programs[i].traces) {
      const TraceCheckReport report = check_trace(*t, result.candidates, check_options, options.threads);
      for (size_t c = 0; c < report.outcomes.size(); ++c) {
        const CheckResult& r = report.outcomes[c].result;
        fold(folded[c], !r.passed() ? CheckOutcome::Violated : r.triggered ? CheckOutcome::Passed : CheckOutcome::NotTriggered);
      }
    }
    for (size_t c = 0; c < folded.size(); ++c) result.programs[i].outcomes.emplace(*identity_of[c], folded[c]);
  }
  result.rule.min_programs = min_programs;
  result.rule.min_families = 1;  // families are programs here: min_programs already counts them
  result.vetting = vet(result.candidates, result.programs, result.rule);
  return result;
}

}  // namespace traincheck
