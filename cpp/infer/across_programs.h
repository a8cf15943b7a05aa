// Learning from traces of several different programs (docs/analysis.md §Learning across programs).
//
// Inference pools its traces: what held in all of them is an invariant. That is right for runs of one
// program, whose every order and output is part of its correct behaviour. Across programs it also keeps
// what only one program does ("`LSTM.forward` is followed by `clip_grad_norm_`": the one LSTM program
// clips) and what they all happen to share (the seed every script passed), and a new correct program
// breaks them. So, given traces of two programs or more, inference learns as the shipped pack is built
// (pack/vetting.h): each program's own invariants, merged and checked on every program; an invariant is
// kept when it passed on at least `min_programs` programs and was violated on none, fixes no device and no
// step number (rules (a), (b), (d), (f)), and its evidence is not a call made once per run (rule (g)). Kept invariants carry held_on_programs, the number of programs they passed on.
#pragma once

#include <string>
#include <vector>

#include "infer/engine.h"
#include "pack/vetting.h"

namespace traincheck {

// The program a trace folder was collected from: the script its env_dump.txt names (`pyscript:`, else
// `shscript:`), made absolute with the `PWD:` it records when relative. "" when the folder has no
// env_dump.txt or it names no script (traces of other tools, hand-made ones).
std::string program_of_trace_folder(const std::string& folder);

struct ProgramTraces {
  std::string name;                      // the program (program_of_trace_folder, or the folder)
  std::vector<const TraceStore*> traces;  // its runs
};

struct AcrossProgramsResult {
  std::vector<Invariant> candidates;  // every program's own invariants, merged by identity
  VetRule rule;
  std::vector<VetProgram> programs;
  VetResult vetting;                  // decisions point into `candidates`: keep them together
  std::vector<FailedHypothesis> failed;  // every program's failed hypotheses
  size_t hypotheses = 0;                 // over all programs
  std::vector<Invariant> invariants() const { return vetting.pack(); }

  AcrossProgramsResult() = default;
  AcrossProgramsResult(const AcrossProgramsResult&) = delete;  // a copy's decisions would point into the original
  AcrossProgramsResult(AcrossProgramsResult&&) = default;      // a moved vector keeps its elements where they are
};

// Needs at least two programs, each with a trace. `min_programs` >= 1.
AcrossProgramsResult infer_across_programs(const std::vector<ProgramTraces>& programs,
                                           const std::vector<const Relation*>& relations, const InferOptions& options,
                                           size_t min_programs);

}  // namespace traincheck
