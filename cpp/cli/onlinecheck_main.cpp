// traincheck-onlinecheck: see check/online/online_command.h. SIGINT and SIGTERM stop it after a last poll.
#include <csignal>
#include <iostream>

#include "check/online/online_command.h"

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  return traincheck::run_online_check_command(argc, argv, std::cerr, g_stop);
}
