#include "trace/lost_records.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "common/console_text.h"

namespace traincheck {

namespace {

// The number of the line that starts at byte `offset` of `path` (1-based): newlines before it, plus one.
uint64_t line_at_offset(const std::string& path, uint64_t offset) {
  std::ifstream in(path, std::ios::binary);
  uint64_t line = 1, read = 0;
  char block[1 << 16];
  while (read < offset && in) {
    in.read(block, static_cast<std::streamsize>(std::min<uint64_t>(sizeof block, offset - read)));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    line += static_cast<uint64_t>(std::count(block, block + got, '\n'));
    read += got;
  }
  return line;
}

}  // namespace

std::vector<LostRecords> read_recorder_losses(const std::string& folder, const std::vector<std::string>& files,
                                              std::ostream& warn) {
  std::vector<LostRecords> out;
  std::error_code ec;
  std::vector<std::filesystem::path> logs;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("traincheck_recorder_") && name.ends_with(".log")) logs.push_back(entry.path());
  }
  std::sort(logs.begin(), logs.end());
  for (const std::filesystem::path& log : logs) {
    std::ifstream in(log);
    std::string line;
    uint64_t write_errors = 0, lines_named = 0;
    for (size_t number = 1; std::getline(in, line); ++number) {
      std::istringstream fields(line);
      std::string key;
      fields >> key;
      if (key == "write_errors:") {
        fields >> write_errors;
      } else if (key == "lost_lines:") {
        uint64_t count = 0, offset = 0;
        std::string at, in_word, file;
        fields >> count >> at >> offset >> in_word;
        const bool read = static_cast<bool>(fields);
        if (read) std::getline(fields >> std::ws, file);
        if (!read || at != "at" || in_word != "in" || file.empty()) {
          warn << "warning: " << console_text(log.string()) << ":" << number << ": field 'lost_lines': cannot read '"
               << console_text(line, 200) << "' (line skipped)\n";
          continue;
        }
        lines_named += count;
        const auto it = std::find_if(files.begin(), files.end(),
                                     [&](const std::string& f) { return std::filesystem::path(f).filename() == file; });
        if (it == files.end()) {
          out.push_back(LostRecords{0, 0, count, false});
          continue;
        }
        const auto index = static_cast<uint32_t>(it - files.begin());
        out.push_back(LostRecords{index, line_at_offset(*it, offset), count, true});
      } else if (key == "lost_lines_unplaced:") {
        uint64_t count = 0;
        fields >> count;
        lines_named += count;
        if (count) out.push_back(LostRecords{0, 0, count, false});
      }
    }
    // A log that counts write errors but names no lost lines: lines were lost, how many and where unknown.
    if (write_errors > 0 && lines_named == 0) out.push_back(LostRecords{0, 0, write_errors, false});
  }
  return out;
}

void add_losses(RawTrace& raw, std::vector<LostRecords> losses) {
  if (losses.empty()) return;
  raw.lost.insert(raw.lost.end(), losses.begin(), losses.end());
  std::stable_sort(raw.lost.begin(), raw.lost.end(), [](const LostRecords& a, const LostRecords& b) {
    if (a.placed != b.placed) return a.placed;  // placed first
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
}

std::string incomplete_trace_line(uint64_t records_lost, const std::vector<std::string>& files) {
  std::string line = "checked on an incomplete trace: " + std::to_string(records_lost) +
                     (records_lost == 1 ? " record lost" : " records lost");
  if (!files.empty()) {
    line += " (in ";
    for (size_t i = 0; i < files.size() && i < 3; ++i) line += (i ? ", " : "") + console_text(files[i], 200);
    if (files.size() > 3) line += " and " + std::to_string(files.size() - 3) + " more files";
    line += ")";
  }
  return line + "; what the lost records touch is left out of every check";
}

}  // namespace traincheck
