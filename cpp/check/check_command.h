// traincheck-check (docs/formats.md §traincheck-check) as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>

namespace traincheck {

// Returns the process exit status: 0 on success (violations found or not), 1 on bad input (message
// on `err`), 2 on a bad command line.
int run_check_command(int argc, const char* const* argv, std::ostream& err);

}  // namespace traincheck
