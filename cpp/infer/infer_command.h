// traincheck-infer (docs/formats.md §traincheck-infer) as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>

namespace traincheck {

// Returns the process exit status: 0 on success, 1 on bad input (message on `err`), 2 on a bad
// command line.
int run_infer_command(int argc, const char* const* argv, std::ostream& err);

}  // namespace traincheck
