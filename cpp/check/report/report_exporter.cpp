#include "check/report/report_exporter.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <ostream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace traincheck {

namespace fs = std::filesystem;

namespace {

// The exporter's exit status when a backend package is not installed (it names the package on stderr).
constexpr int kMissingPackage = 3;

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

}  // namespace

std::string find_report_python() {
  if (const char* env = std::getenv("TRAINCHECK_PYTHON"); env && *env) return env;
  // Beside the executable: the bin folder of the venv (or prefix) whose pip installed traincheck.
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const char* name : {"python3", "python"})
      if (executable(self.parent_path() / name)) return (self.parent_path() / name).string();
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const size_t colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (!dir.empty() && executable(fs::path(dir) / "python3")) return (fs::path(dir) / "python3").string();
    }
  return "";
}

ReportExporter::ReportExporter(const ArgParser& args, std::string prog, std::string mode, std::string output_dir, std::ostream& err)
    : prog_(std::move(prog)), mode_(std::move(mode)), output_dir_(std::move(output_dir)), err_(err),
      timeout_s_(read_env_number(kExportTimeoutSetting)) {
  if (args.flag_set("--report-wandb")) backends_.push_back("wandb");
  if (args.flag_set("--report-mlflow")) backends_.push_back("mlflow");
  for (const char* o : {"--wandb-project", "--wandb-entity", "--wandb-run-name", "--wandb-group", "--wandb-run-id",
                        "--mlflow-experiment", "--mlflow-run-name"})
    if (args.has(o)) options_.insert(options_.end(), {o, args.get(o)});
  if (args.has("--wandb-tags")) {
    options_.push_back("--wandb-tags");
    for (const std::string& t : args.get_list("--wandb-tags")) options_.push_back(t);
  }
}

ReportExporter::~ReportExporter() {
  if (child_ > 0) finish();
}

bool ReportExporter::spawn(bool follow) {
  const std::string python = find_report_python();
  if (python.empty()) {
    err_ << "warning: " << prog_ << ": no Python interpreter found for --report-" << backends_.front()
         << " (set TRAINCHECK_PYTHON); nothing reported, the check's result is unchanged\n";
    return false;
  }
  std::vector<std::string> argv = {python, "-I", "-m", "traincheck.reporting.export", "--output-dir", output_dir_, "--mode", mode_};
  for (const std::string& b : backends_) argv.push_back("--" + b);
  if (follow) argv.push_back("--follow");
  argv.insert(argv.end(), options_.begin(), options_.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int fds[2] = {-1, -1};
  if (follow) {
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      err_ << "warning: " << prog_ << ": reporting: pipe: " << std::strerror(errno) << "; nothing reported\n";
      posix_spawn_file_actions_destroy(&actions);
      return false;
    }
    posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  // A group of its own: a hung backend's helper processes are stopped with it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const int rc = posix_spawn(&child_, python.c_str(), &actions, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (follow) ::close(fds[0]);
  if (rc != 0) {
    err_ << "warning: " << prog_ << ": reporting: cannot run " << python << ": " << std::strerror(rc)
         << "; nothing reported, the check's result is unchanged\n";
    if (follow) ::close(fds[1]);
    child_ = -1;
    return false;
  }
  stdin_fd_ = follow ? fds[1] : -1;
  return true;
}

void ReportExporter::start_follow() {
  if (!enabled() || child_ > 0) return;
  spawn(true);
}

void ReportExporter::log_step_counts(const std::vector<std::pair<int64_t, int64_t>>& counts) {
  if (stdin_fd_ < 0 || counts.empty()) return;
  std::string lines;
  for (const auto& [step, invariants] : counts) lines += std::to_string(step) + " " + std::to_string(invariants) + "\n";
  // A child that exited closed the pipe: without SIGPIPE ignored, the write would kill the check.
  ::signal(SIGPIPE, SIG_IGN);
  for (size_t done = 0; done < lines.size();) {
    const ssize_t n = ::write(stdin_fd_, lines.data() + done, lines.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // EPIPE: the child is gone; finish() reaps it and says how it ended
      ::close(stdin_fd_);
      stdin_fd_ = -1;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void ReportExporter::finish() {
  if (!enabled()) return;
  if (child_ <= 0 && !spawn(false)) return;
  if (stdin_fd_ >= 0) {
    ::close(stdin_fd_);  // end of input: the follow child finalises
    stdin_fd_ = -1;
  }
  const std::optional<int> status = wait_or_stop();
  child_ = -1;
  if (status) {
    warn_on_status(*status);
    return;
  }
  err_ << "warning: " << prog_ << ": reporting to ";
  for (size_t i = 0; i < backends_.size(); ++i) err_ << (i ? " and " : "") << backends_[i];
  err_ << " did not finish within " << timeout_s_ << " s (" << kExportTimeoutSetting.name
       << "); stopped; the check's result is unchanged\n";
}

std::optional<int> ReportExporter::wait_or_stop() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s_));
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child_, &status, WNOHANG);
    if (done == child_) return status;
    if (done < 0 && errno != EINTR) return 0;  // not our child any more: nothing to wait for
    if (clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // SIGTERM lets a backend end its run; what still stands a second later is killed.
  ::kill(-child_, SIGTERM);
  const auto grace = clock::now() + std::chrono::seconds(1);
  bool reaped = false;
  while (!reaped && clock::now() < grace) {
    reaped = ::waitpid(child_, &status, WNOHANG) == child_;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-child_, SIGKILL);  // the group's other processes too, even when the child itself has ended
  while (!reaped && ::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
  }
  return std::nullopt;
}

void ReportExporter::warn_on_status(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string what = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                       : "signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == kMissingPackage) what = "a package is missing, see above";
  err_ << "warning: " << prog_ << ": reporting to ";
  for (size_t i = 0; i < backends_.size(); ++i) err_ << (i ? " and " : "") << backends_[i];
  err_ << " failed (" << what << "); the check's result is unchanged\n";
}

}  // namespace traincheck
