// Runs one of the command-line tools' entry points (run_infer_command, run_check_command, ...) in this
// process, as its executable would with `args` (args[0] the program name): its exit status, and what it
// wrote to stderr in `log`.
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

inline int run_command(int (*command)(int, const char* const*, std::ostream&), const std::vector<std::string>& args,
                       std::string& log) {
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream err;
  const int rc = command(static_cast<int>(argv.size()), argv.data(), err);
  log = err.str();
  return rc;
}
