// Output files that are never written through a link: every file the native commands write (results,
// reports, invariant files) is opened here.
//
// A results folder is often reused or shared; a symbolic link planted in it under an output's name
// (failed.log -> ~/.bashrc) would otherwise make a run overwrite any file its user can write. So the
// file's own name must not be a symbolic link (O_NOFOLLOW), nor a regular file with other hard links;
// either is refused with an error naming the path, and nothing is written. The folders on the way are
// not checked: an output folder that is a link is where the user pointed the tool.
#pragma once

#include <string>
#include <string_view>

namespace traincheck {

enum class OutputMode {
  Truncate,   // an existing file is emptied first
  Append,     // writes go to the end (O_APPEND)
  CreateNew,  // the file must not exist yet (O_EXCL)
};

// open(2) of `path` for writing under the rules above, O_CLOEXEC, mode 0644. Returns the descriptor, or
// -1 with errno set: ELOOP for a symbolic link, EMLINK for a file with other hard links. Never throws.
int open_output_fd(const std::string& path, OutputMode mode) noexcept;

// "<path>: cannot open for writing: <why>", with `error` the errno of open_output_fd.
std::string output_open_error(const std::string& path, int error);

// Throws std::runtime_error naming `dir` when it exists as a symbolic link; creates it (and its parents)
// otherwise. For folders a command makes inside its output folder (one per checked trace).
void create_output_subfolder(const std::string& dir);

// A file written front to back, buffered. Every failure throws std::runtime_error naming the path.
class OutputFile {
 public:
  explicit OutputFile(std::string path, OutputMode mode = OutputMode::Truncate);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  void flush();  // what is buffered reaches the file
  void close();  // flushes, then closes; the destructor closes without reporting errors

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string buffer_;
};

// `text` as the whole content of `path`. Throws on failure.
void write_output_file(const std::string& path, std::string_view text);

// `text` as the whole content of `path`, written to a new file beside it and renamed over it, so that a
// reader (a browser refreshing a report) sees the old file or the new one, never half of one. A symbolic
// link at `path` is refused as by open_output_fd, not replaced. Throws on failure (the temporary file is
// removed).
void replace_output_file(const std::string& path, std::string_view text);

}  // namespace traincheck
