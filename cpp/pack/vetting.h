// Vetting candidate invariants into a pack (docs/relations.md §The shipped pack): an invariant
// is kept only when it generalises across the corpus of correct programs:
//   (a) no program violates it (a correct program that breaks it shows it is not a rule of training);
//   (b) it was triggered (its precondition held, and it passed) on at least `min_programs` programs
//       from at least `min_families` model families;
// and, before both, (d) it says nothing about the device tensors or calls are on (`is_cuda is false`,
// `tensor(device="cpu")`): the corpus runs on the CPU only, so it cannot tell a device constant from a rule,
// and such an invariant would alarm on every GPU program; nor about the calls of an accelerator's module
// (`torch.cuda.manual_seed_all` queues the seed on a machine without a device, and calls it on a GPU
// one) (`is_device_bound`);
// and (f) its precondition does not fix the step counter (`meta_vars.step == 1`): the step number is the
// program's own count, and a clause on it stands in for something else (the optimizer's first call, when
// Adam creates its state), which a second optimizer step in step 1, a resumed run or a loop counting from
// 0 breaks (`is_step_bound`);
// and (g), where the programs' traces are at hand (learning across programs, infer/across_programs.h), its
// evidence is not a call made once per run: each API it needs repeated (`repeated_evidence_apis`: the
// call that closes an order's window, Lead's first API "before its next call" and Cover's second "before
// every call"; an API held to argument values) was called at least twice on one thread in a program it
// passed on. From a call made once per run, "`manual_seed` is followed by `kaiming_uniform_`" is a
// script's set-up sequence (another program seeds after building its model, or has no Linear layer) and
// "`manual_seed` calls `_manual_seed_impl(seed=1)`" the seed the scripts chose, not rules of training;
// rule (c), leaving one program out of the learning keeps that program clean, is measured rather than
// enforced: for each program, the candidates the other programs learned, vetted on the other programs, that
// it violates (`leave_one_out`). That is the pack's false-alarm estimate on a program it never saw, and
// (e) acts on it per hypothesis class, for a class generalises or not as a whole:
//   (e) a class is shipped only when, vetted without each corpus program in turn, its invariants alarm
//       on at most `max_relation_loo_share` of the left-out programs. Orderings of library internals
//       ("is_exporting() between two is_initialized() calls") pass (a) on the programs that learned them
//       and still alarm on programs left out: which internal calls a program reaches, and in what order,
//       follows from how it is set up, not from a rule of training.
//   A class is a relation, with the hypotheses that fix an API's argument values apart
//   (`hypothesis_class`): "`kaiming_uniform_` calls `calculate_gain(nonlinearity="leaky_relu")`" states
//   a setting the program chose (a script's own He init passes "relu"), "`Adam.step` calls
//   `is_complex`" states how the library is written; the corpus shows the first kind failing on programs
//   left out and the second not, and judging them together drops both.
//
// Inputs are per program: the identities it learned (its own inference) and what checking every
// candidate on its trace said. Pure set logic; reading and writing files is vet_command.cpp's.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "invariant/invariant.h"
#include "pack/check_outcomes.h"

namespace traincheck {

struct VetRule {
  size_t min_programs = 3;
  size_t min_families = 2;
  double max_relation_loo_share = 1.0;  // (e); 1 admits every relation
};

struct VetProgram {
  std::string name, family;
  std::set<std::string> learned;  // identities its own inference produced
  OutcomesByIdentity outcomes;     // every candidate checked on its trace
  // Rule (g): the functions its traces call at least twice on one thread. Unknown (rule (g) off) when
  // the vetting has only check results, as traincheck-vet does.
  std::optional<std::set<std::string>> repeated_calls;
  std::string checked_folder = {};  // where its outcomes were read from ("" when built in memory): for messages
};

enum class VetVerdict {
  Kept, DeviceBound, StepBound, Violated, TooFewPrograms, OneFamily, SeenOncePerRun, ClassDoesNotGeneralise, NotChecked
};
const char* vet_verdict_name(VetVerdict v);

// Whether the invariant fixes a device: a tensor attribute naming the device (is_cuda, is_cpu, device, ...)
// held to a value, an API argument that is a device (`device=...`, a torch.device value), or an API of an
// accelerator's module (torch.cuda, torch.xpu, torch.mtia, torch.mps, torch.accelerator, and the lazy
// seed queue they share).
bool is_device_bound(const Invariant& invariant);

// Whether a clause of its precondition (any group, any disjunct) holds the step counter, meta_vars.step, to
// values. `consistent meta_vars.step` (two records of one step, as Consistency pairs them) fixes nothing.
bool is_step_bound(const Invariant& invariant);

// Rule (g): the APIs the invariant's evidence needs called more than once per run: the call closing an
// order's window (FunctionLead: its first API; FunctionCover: its second) and every API held to argument
// values. Empty for most invariants.
std::vector<std::string> repeated_evidence_apis(const Invariant& invariant);

// The class rule (e) judges the invariant with: its relation's name, followed by " with argument values"
// when one of its APIs is held to argument values.
std::string hypothesis_class(const Invariant& invariant);

struct VetDecision {
  const Invariant* invariant = nullptr;
  VetVerdict verdict = VetVerdict::NotChecked;
  std::vector<std::string> passed_on, violated_on;  // program names
  std::set<std::string> families_passed;
  size_t learned_by = 0;  // programs whose own inference produced it
};

struct ClassTally {
  size_t candidates = 0, kept = 0, device_bound = 0, step_bound = 0, violated = 0, too_few_programs = 0, one_family = 0,
         seen_once_per_run = 0, class_excluded = 0, not_checked = 0;
  size_t loo_programs_alarmed = 0;  // programs that, left out, violate one of its invariants (before (e))
  bool generalises = true;          // (e)
};

// Rule (c) for one program: what the pack vetted without it (rules (a), (b), (d)) makes it violate.
struct LeaveOneOut {
  std::string program;
  std::vector<const Invariant*> violated;  // in candidate order
};

struct VetResult {
  std::vector<VetDecision> decisions;               // one per candidate, in candidate order
  std::map<std::string, ClassTally> by_class;  // hypothesis_class() -> counts
  std::vector<LeaveOneOut> leave_one_out;            // one per program, in program order
  // The left-out program's violations of the classes (e) admitted: the shipped pack's estimate.
  std::vector<const Invariant*> shipped_leave_one_out(size_t program) const;
  std::vector<const Invariant*> kept() const;
  // The kept invariants as the pack writes them: each with held_on_programs, the programs it passed on
  // (why a user may trust a violation of it).
  std::vector<Invariant> pack() const;
};

// `candidates` must outlive the result. A candidate missing from some program's outcomes is
// NotChecked (the check and the candidate set disagree: a build error the command reports).
VetResult vet(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs, const VetRule& rule);

// A built pack vetted again on programs added to the corpus, before the next full build: rule (a) on the
// grown corpus. An invariant an added program violates is dropped (`dropped` gets it, in pack order);
// each other one's held_on_programs grows by the added programs it passed on. The added programs' own
// candidates join at the next full build. Throws std::runtime_error naming the program and invariant when
// an invariant has no outcome on a program (checked with another pack).
struct PackExtension {
  std::vector<Invariant> pack;
  std::vector<std::pair<Invariant, std::vector<std::string>>> dropped;  // with the programs violating it
};
PackExtension extend_pack(const std::vector<Invariant>& pack, const std::vector<VetProgram>& added);


}  // namespace traincheck
