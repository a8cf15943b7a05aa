// The vetting report (vet_report.json; docs/relations.md §The shipped pack): the rule, per-class tallies, rule (c) for every
// program and each candidate's verdict with the programs it passed and was violated on. traincheck-vet
// writes it with --report, traincheck-infer beside its output when it learns across programs.
#pragma once

#include <string>
#include <vector>

#include "pack/vetting.h"

namespace traincheck {

std::string vet_report_json(const VetResult& result, const std::vector<VetProgram>& programs, const VetRule& rule);

// What `traincheck-vet --extend --report` writes: {"added_programs": [...], "kept": n, "kept_by_relation":
// {relation: n}, "kept_by_class": {hypothesis class: n}, "dropped": [{"text_description", "relation",
// "class", "violated_on": [...]}]}.
std::string extension_report_json(const PackExtension& extension, const std::vector<VetProgram>& added);

}  // namespace traincheck
