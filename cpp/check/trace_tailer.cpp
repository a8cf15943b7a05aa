#include "check/trace_tailer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

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
  size_t total = 0;
  for (auto& [path, f] : files_) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size == f.offset) {
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
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(f.offset));
    const size_t want = static_cast<size_t>(std::min<uintmax_t>(size - f.offset, chunk_bytes_));
    buffer_.assign(f.partial);
    buffer_.resize(f.partial.size() + want);
    in.read(buffer_.data() + f.partial.size(), static_cast<std::streamsize>(want));
    const size_t got = static_cast<size_t>(in.gcount());
    buffer_.resize(f.partial.size() + got);
    f.offset += got;
    f.behind = f.offset < size;
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
