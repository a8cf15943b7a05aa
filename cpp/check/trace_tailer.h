// Follows trace files while a run writes them (traincheck-onlinecheck): polls folders for new trace_*
// files and files for appended bytes. Only complete lines are handed out; a partial last line is kept
// until its newline arrives (the original drops such a line, compat §13 item 33).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace traincheck {

class TraceTailer {
 public:
  // `folders`: every trace file in them, including ones created later; `files`: exactly these (-t).
  TraceTailer(std::vector<std::string> folders, std::vector<std::string> files);

  // Reads what was appended since the last poll and calls `on_lines(path, text)` with the new complete
  // lines of each file (files in name order). Returns the number of new bytes. A folder or file that
  // does not exist yet is not an error; a file that shrank is read again from its start (`warn` says so).
  size_t poll(const std::function<void(const std::string& path, std::string_view lines)>& on_lines,
              const std::function<void(const std::string& message)>& warn);

  size_t files() const { return files_.size(); }
  const std::vector<std::string>& folders() const { return folders_; }

 private:
  struct Followed {
    uint64_t offset = 0;  // bytes consumed (complete lines plus `partial`)
    std::string partial;  // an incomplete last line
  };
  std::vector<std::string> folders_;
  std::map<std::string, Followed> files_;
};

}  // namespace traincheck
