// Reads a trace folder with the trace reader alone (records, no indexes) and exits: memory_bench's
// "reader" row, run as its own process so that its peak RSS is the reader's, and built from another
// tree (the baseline) to compare readers. Prints the record count.
//
// Usage: trace_read FOLDER
#include <cstdio>
#include <fstream>

#include "trace/trace_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_read FOLDER\n");
    return 2;
  }
  std::ofstream quiet("/dev/null");
  traincheck::ReadOptions options;
  options.warnings = &quiet;
  const traincheck::RawTrace trace = traincheck::read_trace_files(traincheck::list_trace_files(argv[1]), options);
  std::printf("%zu records\n", trace.records.size());
  return trace.records.empty() ? 1 : 0;
}
