// A test's scratch folders, under one folder of the system's temp folder per test process that the
// process removes when it exits (CTest runs each test in a process of its own): tests leave nothing
// behind in /tmp (790 folders of them had piled up there over a day's runs).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace scratch {

// <temp>/tc_test_<pid>: removed at exit by the process that made it, never by a forked child exiting.
inline const std::filesystem::path& root() {
  struct Root {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("tc_test_" + std::to_string(getpid()));
    pid_t owner = getpid();
    ~Root() {
      if (getpid() != owner) return;
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Root r;
  return r.path;
}

// A path `name` in it with nothing there (removed if an earlier test of this process made it).
inline std::filesystem::path fresh_path(const std::string& name) {
  const std::filesystem::path p = root() / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(root());
  return p;
}

// An empty folder `name` in it.
inline std::filesystem::path empty_dir(const std::string& name) {
  const std::filesystem::path p = fresh_path(name);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace scratch
