// What the training process hears of a violation while it runs (docs/analysis.md §Online
// check, "Violations while training runs"): the first violation of each invariant, once. The session
// (online_session.h) prints it on stderr from the writer thread as it is found (--on-violation warn or
// raise) and queues it for the training thread, which takes it at the next step boundary to call the
// script's traincheck.on_violation callbacks and, with raise, to stop the run there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace traincheck {

struct OnlineInvariantState;

// What to do when an invariant is first violated while training runs.
enum class ViolationAction { Log, Warn, Raise };
// "log", "warn", "raise"; nullopt for anything else.
std::optional<ViolationAction> violation_action_from_name(std::string_view name);

struct ViolationAlert {
  std::string label;        // the invariant's display name
  std::string relation;     // relation class name
  std::string description;  // text_description
  std::optional<int64_t> step;  // the first violating step, when the records have one
  std::string stage;
  // Why to trust it: the corpus programs it held on (a vetted pack) and the examples it was inferred from.
  std::optional<int64_t> held_on_programs, examples;
};

ViolationAlert alert_of(const OnlineInvariantState& state);

// One line for the console, control characters escaped and names cut (console_text.h):
// "traincheck: violation at step 4 (training): <label> (held on 8 programs, 120 examples); see <failed.log>\n"
std::string alert_console_line(const ViolationAlert& alert, std::string_view failed_log);

}  // namespace traincheck
