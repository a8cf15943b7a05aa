// traincheck-vet: vets candidate invariants into a pack (pack/vetting.h) from per-program check results,
// the set logic behind `python -m eval.pack_corpus.build` (docs/relations.md §The shipped pack).
//
//   traincheck-vet --candidates merged.json --programs programs.jsonl -o pack.json [--report vet.json]
//                  [--min-programs 3] [--min-families 2] [--leave-one-out]
//
// programs.jsonl: one object per line, {"name", "family", "learned": <its own invariant file>,
// "checked": <its per-trace check folder>}. Candidates that no listed program learned are left out (so
// listing all programs but one builds that program's leave-one-out pack). The pack is written as an invariant file; the report holds
// per-relation tallies, each candidate's verdict with the programs it passed and was violated on, and,
// with --leave-one-out, rule (c) for every program. Exit status: 0, 1 bad input, 2 bad command line.
#pragma once

#include <ostream>

namespace traincheck {

int run_vet_command(int argc, const char* const* argv, std::ostream& err);

}  // namespace traincheck
