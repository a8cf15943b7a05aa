// Loads a trace of a relation case (tests/cpp/data/relation_cases/README.md): a JSONL file, one record
// per line, with the API signatures of `<stem>.api_signatures.json` beside it when there is one.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "trace/api_signatures.h"
#include "trace/trace_reader.h"
#include "trace/trace_store.h"

inline const std::filesystem::path kRelationCases = std::filesystem::path(TC_TEST_DATA_DIR) / "relation_cases";

inline std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `file` is the trace's path, relative to kRelationCases when not absolute; the store is named after its stem.
inline traincheck::TraceStore load_case_trace(const std::filesystem::path& file) {
  const std::filesystem::path path = file.is_absolute() ? file : kRelationCases / file;
  const std::string name = path.stem().string();
  std::filesystem::path signatures = path;
  signatures.replace_extension(".api_signatures.json");
  return traincheck::TraceStore(name, traincheck::read_trace_text(name, slurp_file(path)),
                                traincheck::ApiSignatures::load(signatures.string()));
}
