#include "check/online/violation_alert.h"

#include "check/online/online_checker.h"
#include "check/violation_summary.h"
#include "common/console_text.h"

namespace traincheck {

std::optional<ViolationAction> violation_action_from_name(std::string_view name) {
  if (name == "log") return ViolationAction::Log;
  if (name == "warn") return ViolationAction::Warn;
  if (name == "raise") return ViolationAction::Raise;
  return std::nullopt;
}

ViolationAlert alert_of(const OnlineInvariantState& state) {
  ViolationAlert a;
  a.label = state.display_name;
  a.relation = state.invariant->relation;
  a.description = state.invariant->text_description.str();
  a.step = state.first_step;
  a.stage = state.first_stage;
  a.held_on_programs = state.invariant->held_on_programs;
  a.examples = state.invariant->num_positive_examples;
  return a;
}

std::string alert_console_line(const ViolationAlert& a, std::string_view failed_log) {
  std::string line = "traincheck: violation";
  if (a.step) line += " at step " + std::to_string(*a.step);
  if (!a.stage.empty()) line += " (" + console_text(a.stage) + ")";
  line += ": " + console_text(a.label);
  const std::string trust = trust_text(a.held_on_programs, a.examples);
  if (!trust.empty()) line += " (" + trust + ")";
  if (!failed_log.empty()) line += "; see " + console_text(failed_log);
  return line + "\n";
}

}  // namespace traincheck
