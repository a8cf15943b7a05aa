#include "check/trace_tailer.h"

#include <filesystem>
#include <fstream>

#include "trace/trace_reader.h"

namespace traincheck {

namespace fs = std::filesystem;

TraceTailer::TraceTailer(std::vector<std::string> folders, std::vector<std::string> files) : folders_(std::move(folders)) {
  for (std::string& f : files) files_.emplace(std::move(f), Followed{});
}

size_t TraceTailer::poll(const std::function<void(const std::string&, std::string_view)>& on_lines,
                         const std::function<void(const std::string&)>& warn) {
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
  std::string chunk;
  for (auto& [path, f] : files_) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size == f.offset) continue;
    if (size < f.offset) {
      warn(path + ": file shrank; reading it again from the start");
      f = Followed{};
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(f.offset));
    chunk.assign(size - f.offset, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(in.gcount()));
    f.offset += chunk.size();
    total += chunk.size();
    f.partial += chunk;
    const size_t last_nl = f.partial.rfind('\n');
    if (last_nl == std::string::npos) continue;
    on_lines(path, std::string_view(f.partial).substr(0, last_nl + 1));
    f.partial.erase(0, last_nl + 1);
  }
  return total;
}

}  // namespace traincheck
