// Follows trace files while a run writes them (traincheck-onlinecheck): polls folders for new trace_*
// files and files for appended bytes. Only complete lines are handed out; a partial last line is kept
// until its newline arrives (the original drops such a line, docs/differences.md §Online checking).
//
// Memory is bounded whatever the backlog: one poll reads at most `chunk_bytes` from each file (a file
// that was already written when the checker started is read over several polls, behind() telling the
// caller to poll again at once), through one read buffer shared by all files.
//
// Files are followed by inode, not only by name: a trace that is rotated (renamed, then a new file of the
// same name created) is noticed, the new file read from its start (keeping the old offset skipped its
// first bytes), and a renamed file that still looks like a trace (trace_API_1_2.log.1) is followed on
// from where it was, never read twice.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace traincheck {

class TraceTailer {
 public:
  static constexpr size_t kDefaultChunkBytes = size_t{4} << 20;

  // `folders`: every trace file in them, including ones created later; `files`: exactly these (-t).
  TraceTailer(std::vector<std::string> folders, std::vector<std::string> files, size_t chunk_bytes = kDefaultChunkBytes);

  // Reads what was appended since the last poll, at most chunk_bytes per file, and calls
  // `on_lines(path, text)` with the new complete lines of each file (files in name order; `text` is valid
  // during the call only). Returns the number of new bytes. A folder or file that does not exist yet is
  // not an error; a file that shrank is read again from its start (`warn` says so). Files for which
  // `skip(path)` returns true are not read this time. A rotated file is said through `warn` too.
  size_t poll(const std::function<void(const std::string& path, std::string_view lines)>& on_lines,
              const std::function<void(const std::string& message)>& warn,
              const std::function<bool(const std::string& path)>& skip = {});

  // Whether the last poll left bytes unread (chunk limit reached, or skipped with bytes pending) in any
  // file / in `path`.
  bool behind() const;
  bool behind(const std::string& path) const;
  std::vector<std::string> behind_files() const;

  size_t files() const { return files_.size(); }
  const std::vector<std::string>& folders() const { return folders_; }

 private:
  struct Followed {
    uint64_t offset = 0;  // bytes consumed (complete lines plus `partial`)
    std::string partial;  // an incomplete last line
    bool behind = false;  // the last poll saw more bytes than it read
    uint64_t device = 0, inode = 0;  // of the file read so far; inode 0: nothing read yet
  };
  // Moves the state of files whose name now points at another file (rotated) to the name their file has
  // now, when it is followed too; the name's own state starts afresh.
  void follow_renames(const std::function<void(const std::string&)>& warn);
  std::vector<std::string> folders_;
  std::map<std::string, Followed> files_;
  size_t chunk_bytes_;
  std::string buffer_;  // `partial` + the bytes read this time, for the file being read
};

}  // namespace traincheck
