#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/fd_write.h"

namespace traincheck {

namespace {

constexpr size_t kBufferBytes = 1 << 16;

[[noreturn]] void throw_errno(const std::string& path, const char* what, int error) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(error));
}

}  // namespace

int open_output_fd(const std::string& path, OutputMode mode) noexcept {
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  if (mode == OutputMode::Append) flags |= O_APPEND;
  if (mode == OutputMode::CreateNew) flags |= O_EXCL;
  // Not O_TRUNC: a file with other hard links is refused before anything of it is lost.
  int fd;
  do fd = ::open(path.c_str(), flags, 0644);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
    ::close(fd);
    errno = EMLINK;
    return -1;
  }
  // Only a regular file is emptied: /dev/null or a pipe named by the user is written as it is.
  if (mode == OutputMode::Truncate && S_ISREG(st.st_mode) && st.st_size > 0 && ::ftruncate(fd, 0) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

std::string output_open_error(const std::string& path, int error) {
  if (error == ELOOP) return path + ": is a symbolic link; refusing to write through it (remove it, or choose another output)";
  if (error == EMLINK) return path + ": has other hard links; refusing to write through them (remove it, or choose another output)";
  return path + ": cannot open for writing: " + std::strerror(error);
}

void create_output_subfolder(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(dir, ec)))
    throw std::runtime_error(dir + ": is a symbolic link; refusing to write results through it (remove it, or choose another output folder)");
  std::filesystem::create_directories(dir);
}

OutputFile::OutputFile(std::string path, OutputMode mode) : path_(std::move(path)) {
  fd_ = open_output_fd(path_, mode);
  if (fd_ < 0) throw std::runtime_error(output_open_error(path_, errno));
  buffer_.reserve(kBufferBytes);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::string_view text) {
  if (fd_ < 0) throw std::runtime_error(path_ + ": write after close");
  if (buffer_.size() + text.size() > kBufferBytes) flush();
  if (text.size() >= kBufferBytes) {
    if (!write_all(fd_, text)) throw_errno(path_, "write failed", errno);
    return;
  }
  buffer_.append(text);
}

void OutputFile::flush() {
  if (buffer_.empty()) return;
  if (fd_ < 0 || !write_all(fd_, buffer_)) throw_errno(path_, "write failed", fd_ < 0 ? EBADF : errno);
  buffer_.clear();
}

void OutputFile::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) throw_errno(path_, "write failed", errno);
}

void write_output_file(const std::string& path, std::string_view text) {
  OutputFile out(path);
  out.write(text);
  out.close();
}

void replace_output_file(const std::string& path, std::string_view text) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) throw std::runtime_error(output_open_error(path, ELOOP));
  // A name of this process and call: two writers of one file (threads, processes) never share a temporary.
  static std::atomic<unsigned> counter{0};
  int fd = -1;
  std::string tmp;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = path + "." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) + ".tmp";
    fd = open_output_fd(tmp, OutputMode::CreateNew);
    if (fd < 0 && errno != EEXIST) throw std::runtime_error(output_open_error(tmp, errno));
  }
  if (fd < 0) throw std::runtime_error(output_open_error(tmp, EEXIST));
  const bool written = write_all(fd, text);
  const int write_error = errno;
  const bool closed = ::close(fd) == 0 || errno == EINTR;
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    throw_errno(tmp, "write failed", written ? errno : write_error);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw_errno(path, "cannot replace", error);
  }
}

}  // namespace traincheck
