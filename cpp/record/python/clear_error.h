#pragma once

#include <Python.h>

namespace traincheck {

// Clears the Python error that the tool's own work left (a failed attribute read, a hook that raised),
// but never the script's stop request. Python runs signal handlers at the next bytecode of the main thread,
// which can be the tool's hook: a KeyboardInterrupt (Ctrl-C) or SystemExit (a handler calling sys.exit)
// raised there belongs to the script. Such an exception is queued again as a pending call, so it is raised
// in the script's own code at its next bytecode, as it would have been without the tool.
void clear_error_keeping_stop_requests();

}  // namespace traincheck
