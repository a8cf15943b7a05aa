// report.html's "When it went wrong" panel (docs/formats.md §report.html): the first bad step stated in
// text, then an inline SVG with training steps on the x axis and one row per violated invariant (by
// label), a mark at each step where it was violated and a line at the first bad step. No script, no
// external asset: hover titles are SVG <title> elements. Rows are the earliest-violated first; past
// `max_rows` the panel says how many more there are, so hundreds of invariants stay readable.
//
// Marks carry class "tl-mark" and data-step; the first-step line class "tl-first"; each row's group
// class "tl-row" and data-label: tests read the rendered page by these.
#pragma once

#include <string>
#include <vector>

#include "check/violation_summary.h"

namespace traincheck {

inline constexpr size_t kTimelineMaxRows = 25;

std::string render_violation_timeline(std::vector<ViolationSummaryRow> rows, size_t max_rows = kTimelineMaxRows);

}  // namespace traincheck
