#include "check/online/trace_tailer.h"

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/trace_reader.h"

namespace traincheck {

namespace fs = std::filesystem;

TraceTailer::TraceTailer(std::vector<std::string> folders, std::vector<std::string> files, size_t chunk_bytes)
    : folders_(std::move(folders)), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {
  for (std::string& f : files) files_.emplace(std::move(f), Followed{});
}

bool TraceTailer::behind() const {
  return std::any_of(files_.begin(), files_.end(), [](const auto& entry) { return entry.second.behind; });
}

bool TraceTailer::behind(const std::string& path) const {
  auto it = files_.find(path);
  return it != files_.end() && it->second.behind;
}

std::vector<std::string> TraceTailer::behind_files() const {
  std::vector<std::string> out;
  for (const auto& [path, f] : files_)
    if (f.behind) out.push_back(path);
  return out;
}

namespace {

struct FileId {
  uint64_t device = 0, inode = 0, size = 0;
  bool exists = false;
};

FileId file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size), true};
}

}  // namespace

void TraceTailer::follow_renames(const std::function<void(const std::string&)>& warn) {
  std::map<std::string, FileId> now;
  for (const auto& [path, f] : files_) now.emplace(path, file_id(path));
  for (auto& [path, f] : files_) {
    const FileId& id = now[path];
    if (f.inode == 0 || (id.exists && id.device == f.device && id.inode == f.inode)) continue;
    if (!id.exists) continue;  // removed (or being renamed): its state waits for a file of that name
    // Another file under this name: where did the one we read go?
    std::string moved_to;
    for (auto& [other, g] : files_)
      if (other != path && g.inode == 0 && g.offset == 0 && now[other].exists && now[other].device == f.device &&
          now[other].inode == f.inode)
        moved_to = other;
    if (!moved_to.empty()) {
      files_[moved_to] = std::move(f);
      warn(path + ": rotated (renamed to " + moved_to + "); following both, the new " + path + " from its start");
    } else {
      warn(path + ": rotated (replaced by a new file); reading the new file from its start (lines the old one got since the last poll are not read)");
    }
    f = Followed{};
  }
}

size_t TraceTailer::poll(const std::function<void(const std::string&, std::string_view)>& on_lines,
                         const std::function<void(const std::string&)>& warn,
                         const std::function<bool(const std::string&)>& skip) {
  for (const std::string& folder : folders_) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;  // not created yet
    try {
      for (std::string& path : list_trace_files(folder)) files_.try_emplace(std::move(path));
    } catch (const TraceReadError&) {
      // Listing raced with the folder's removal; the next poll tries again.
    }
  }
  follow_renames(warn);
  size_t total = 0;
  for (auto& [path, f] : files_) {
    const FileId id = file_id(path);
    const uint64_t size = id.size;
    if (!id.exists || size == f.offset) {
      f.behind = false;
      continue;
    }
    if (size < f.offset) {
      warn(path + ": file shrank; reading it again from the start");
      f = Followed{};
    }
    if (skip && skip(path)) {
      f.behind = true;
      continue;
    }
    // The file read is the one opened: its inode comes from the descriptor, so a rename between the
    // stat above and here is noticed at the next poll rather than mixing two files under one offset.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || (f.inode != 0 && (static_cast<uint64_t>(st.st_ino) != f.inode ||
                                                   static_cast<uint64_t>(st.st_dev) != f.device))) {
      ::close(fd);  // replaced since follow_renames looked: the next poll sorts it out
      continue;
    }
    f.device = static_cast<uint64_t>(st.st_dev);
    f.inode = static_cast<uint64_t>(st.st_ino);
    const uint64_t end = std::max<uint64_t>(static_cast<uint64_t>(st.st_size), f.offset);
    const size_t want = static_cast<size_t>(std::min<uint64_t>(end - f.offset, chunk_bytes_));
    buffer_.assign(f.partial);
    buffer_.resize(f.partial.size() + want);
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, buffer_.data() + f.partial.size() + got, want - got, static_cast<off_t>(f.offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    buffer_.resize(f.partial.size() + got);
    f.offset += got;
    f.behind = f.offset < end;
    total += got;
    const size_t last_nl = buffer_.rfind('\n');
    if (last_nl == std::string::npos) {
      f.partial.assign(buffer_);
      continue;
    }
    on_lines(path, std::string_view(buffer_).substr(0, last_nl + 1));
    f.partial.assign(buffer_, last_nl + 1);
  }
  // The shared buffer keeps one chunk's capacity, not the largest line ever seen.
  if (buffer_.capacity() > 2 * chunk_bytes_ + 4096) std::string().swap(buffer_);
  return total;
}

}  // namespace traincheck
