// Records a trace lacks (docs/formats.md §Damaged and incomplete traces). The reader keeps each damaged
// line's place (RawTrace::lost); this reads what a trace folder's recorder logs
// (traincheck_recorder_<pid>.log) say the trace lacks: lines the recorder could not write (a full disk, an unwritable folder), and where.
//
// The recorder writes a trace file in whole-line batches and cuts a batch the disk could not take back to
// where it began, so lost lines leave no mark in the file itself: the log names the file and the byte
// offset where they would have begun ("lost_lines: N at OFFSET in FILE"); that offset becomes the line
// they would have come before. Lines lost past the log's list, or a log that counts write errors without
// places, are lost at no known place ("placed" false).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "trace/trace_reader.h"

namespace traincheck {

// The losses the recorder logs in `folder` report for `files` (the trace's files, full paths, as
// RawTrace::files). A lost file the trace does not have (never created) is a loss at no known place.
// A log line that does not parse is warned about on `warn` and skipped.
std::vector<LostRecords> read_recorder_losses(const std::string& folder, const std::vector<std::string>& files,
                                              std::ostream& warn);

// Adds `losses` to raw.lost, keeping it in file order, then line order (the placed ones first).
void add_losses(RawTrace& raw, std::vector<LostRecords> losses);

// The line that says a verdict was reached on an incomplete trace, naming (the first few of) the files
// that lack records: console, summary and report print it as is.
std::string incomplete_trace_line(uint64_t records_lost, const std::vector<std::string>& files);

}  // namespace traincheck
