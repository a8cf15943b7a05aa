// traincheck-onlinecheck (compat §3.4) as a function, so tests can run it in-process.
#pragma once

#include <atomic>
#include <iosfwd>

namespace traincheck {

// Runs until `stop` becomes true (the CLI's SIGINT/SIGTERM handler sets it) or, with
// --exit-when-idle S, until no trace data arrived for S seconds. Returns the exit status: 0 after a
// normal stop, 1 on bad input (message on `err`), 2 on a bad command line.
int run_online_check_command(int argc, const char* const* argv, std::ostream& err, const std::atomic<bool>& stop);

}  // namespace traincheck
