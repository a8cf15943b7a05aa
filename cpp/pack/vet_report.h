// The vetting report (vet_report.json; docs/relations.md §The shipped pack): the rule, per-class tallies, rule (c) for every
// program and each candidate's verdict with the programs it passed and was violated on. traincheck-vet
// writes it with --report, traincheck-infer beside its output when it learns across programs.
#pragma once

#include <string>
#include <vector>

#include "pack/vetting.h"

namespace traincheck {

std::string vet_report_json(const VetResult& result, const std::vector<VetProgram>& programs, const VetRule& rule);

}  // namespace traincheck
