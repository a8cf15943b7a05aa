// Waiting for a forked test child with a limit: a child that hangs (a lock copied held across the fork)
// is killed and reported as such in seconds, where a plain waitpid would hold the test until CTest's own
// limit and name nothing.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include <chrono>
#include <string>

// How a child ended: its exit code when it exited, or why it did not.
struct ChildExit {
  bool exited = false;     // exited on its own, with `code`
  int code = -1;
  bool hung = false;       // still running at the limit: killed
  int signal = 0;          // ended by this signal (SIGKILL when hung)

  bool ok() const { return exited && code == 0; }
  std::string describe() const {
    if (exited) return "exited with " + std::to_string(code);
    if (hung) return "hung: killed at the limit";
    return "ended by signal " + std::to_string(signal);
  }
};

// Waits for `child` at most `limit`; kills it when the limit passes.
inline ChildExit wait_for_child(pid_t child, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  ChildExit out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0) return out;  // not our child: neither exited nor hung
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      out.hung = true;
      break;
    }
    const timespec pause{0, 2'000'000};  // 2 ms
    ::nanosleep(&pause, nullptr);
  }
  if (WIFEXITED(status)) {
    out.exited = true;
    out.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  return out;
}
