// report.html (docs/formats.md §report.html): one self-contained page, inline CSS, no JavaScript (<details>
// expands). Summary cards, a violations table (first/last step, count, step list, sample records), a panel
// per trace (failed/passed/not-triggered bar, top failed invariants, relation breakdown), and the overall
// relation breakdown.
#pragma once

#include <string>
#include <vector>

#include "check/checker.h"

namespace traincheck {

std::string render_report_html(const std::vector<TraceCheckReport>& reports, const std::string& output_dir);

}  // namespace traincheck
