#include "pack/check_outcomes.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "invariant/invariant.h"
#include "relations/registry.h"
#include "trace/json_parse.h"
#include "trace/value.h"

namespace traincheck {

namespace {

// Calls `visit(object_text, first_line)` for each top-level object of a check log.
template <typename Visit>
void for_each_object(const std::string& path, Visit&& visit) {
  std::ifstream in(path);
  if (!in) return;  // the checker writes every log; a missing one holds nothing
  std::string line, object;
  size_t line_no = 0, first_line = 0;
  auto flush = [&] {
    if (!object.empty()) visit(object, first_line);
    object.clear();
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line[0] == '{') {
      flush();
      first_line = line_no;
    }
    if (line.empty() && object.empty()) continue;
    object += line;
    object += '\n';
  }
  flush();
}

void read_log(const std::string& path, CheckOutcome outcome, OutcomesByIdentity& out) {
  Value v;
  std::string error;
  for_each_object(path, [&](const std::string& text, size_t line) {
    const std::string where = path + ":" + std::to_string(line);
    if (!parse_json(text, v, error)) throw CheckOutcomeError(where + ": not valid JSON: " + error);
    const Value* inv = v.find("invariant");
    if (inv == nullptr) throw CheckOutcomeError(where + ": field 'invariant' is missing");
    std::string identity;
    try {
      identity = invariant_from_value(*inv, path, line, &relation_names()).identity();
    } catch (const InvariantFormatError& e) {
      throw CheckOutcomeError(std::string(e.what()));
    }
    auto [it, fresh] = out.emplace(identity, outcome);
    if (!fresh && it->second != outcome)
      throw CheckOutcomeError(where + ": invariant '" + identity + "' also appears in another log of this folder");
  });
}

}  // namespace

OutcomesByIdentity read_check_outcomes(const std::string& trace_check_dir) {
  if (!std::filesystem::is_directory(trace_check_dir))
    throw CheckOutcomeError(trace_check_dir + ": not a check output folder");
  OutcomesByIdentity out;
  const std::filesystem::path dir(trace_check_dir);
  read_log((dir / "passed.log").string(), CheckOutcome::Passed, out);
  read_log((dir / "failed.log").string(), CheckOutcome::Violated, out);
  read_log((dir / "not_triggered.log").string(), CheckOutcome::NotTriggered, out);
  return out;
}

}  // namespace traincheck
