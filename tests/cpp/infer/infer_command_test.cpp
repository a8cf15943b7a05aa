// traincheck-infer's output does not depend on the thread count.
//
// Threads change the order in which trace files are parsed, and so the order in which field names are
// interned: key ids (trace/key_table.h) are assigned first come, first served. Records keep their
// fields sorted by key id, so anything that walks a record's fields in stored order and lets that order
// reach the output is scheduling-dependent. Racing threads make such a bug flaky to observe; this test
// makes it certain: each run happens in a fresh forked process, one with one thread and the natural
// interning order, the others with several threads after interning every name of the traces in
// ascending or descending order, and the invariant and failed-hypothesis files must be byte-identical.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "infer/infer_command.h"
#include "testing/synthetic_trace.h"
#include "trace/key_table.h"
#include "trace/trace_store.h"
#include "child_exit.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

const fs::path kData = fs::path(TC_TEST_DATA_DIR) / "e2e";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `body` in a forked child (its key table starts as this process's); true if it exited with 0.
bool in_child(const std::function<bool()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body() ? 0 : 1);
  const ChildExit ended = wait_for_child(pid);
  EXPECT_FALSE(ended.hung) << "the child " << ended.describe();
  return ended.ok();
}

bool infer(const std::vector<std::string>& folders, const fs::path& output, int threads) {
  std::vector<std::string> args = {"traincheck-infer", "-f"};
  args.insert(args.end(), folders.begin(), folders.end());
  for (const std::string& a : {std::string("-o"), output.string(), std::string("--threads"), std::to_string(threads)}) args.push_back(a);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream err;
  return run_infer_command(static_cast<int>(argv.size()), argv.data(), err) == 0;
}

void collect_names(const Value& v, std::set<std::string>& names) {
  if (v.is_array())
    for (const Value& x : v.as_array()) collect_names(x, names);
  if (!v.is_object()) return;
  for (const Member& m : v.as_object()) {
    names.insert(std::string(key_name(m.key)));
    collect_names(m.value, names);
  }
}

class InferCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tc_infer_command_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(InferCommand, OutputIsByteIdenticalWhateverTheThreadCountAndInterningOrder) {
  // The e2e runs and a longer synthetic one with a testing stage, legacy attribute names and a bug.
  const fs::path third = dir_ / "third";
  SyntheticTraceSpec spec;
  spec.iterations = 8;
  spec.eval_every = 2;
  spec.legacy_prefix = true;
  spec.skip_zero_grad_reset_at = 4;
  write_synthetic_trace(third.string(), spec);
  // And variables whose two attributes always agree: a Consistency pair of two different attributes,
  // whose param order must not follow the attributes' key ids.
  const fs::path counters = dir_ / "counters";
  fs::create_directories(counters);
  {
    std::ofstream out(counters / "trace_VAR_1_1.log");
    int64_t time = 0;
    for (int step = 1; step <= 4; ++step)
      for (const char* name : {"counter.a", "counter.b"})
        out << R"({"var_name":")" << name << R"(","var_type":"mylib.Counter","process_id":1,"thread_id":1,"meta_vars":{"step":)"
            << step << R"(},"type":"state_change","attributes":{"beta":)" << step << R"(,"alpha":)" << step
            << R"(},"time":)" << (time += 10) << "}\n";
  }
  std::vector<std::string> folders = {(kData / "good_run1").string(), (kData / "good_run2").string(), third.string(),
                                      counters.string()};
  // Real traces can be checked the same way: TC_DETERMINISM_TRACES=dir1:dir2:...
  if (const char* env = std::getenv("TC_DETERMINISM_TRACES")) {
    folders.clear();
    std::stringstream list(env);
    for (std::string f; std::getline(list, f, ':');) folders.push_back(f);
  }

  // Every name the traces intern, found in a child so that this process's table stays pristine.
  const fs::path names_file = dir_ / "names.txt";
  ASSERT_TRUE(in_child([&] {
    std::set<std::string> names;
    for (const std::string& f : folders) {
      const TraceStore trace = TraceStore::load_folder(f);
      for (const Record& r : trace.records()) collect_names(r.to_value(), names);
    }
    std::ofstream out(names_file);
    for (const std::string& n : names) out << n << "\n";
    return true;
  }));
  const std::string names = slurp(names_file);
  EXPECT_GT(std::count(names.begin(), names.end(), '\n'), 30) << names;

  // One thread and the natural order, against several threads after interning every name first, in
  // ascending and in descending order (one of them differs from the traces' own order wherever two
  // names meet in an order-sensitive place).
  const fs::path natural = dir_ / "natural.json";
  ASSERT_TRUE(in_child([&] { return infer(folders, natural, 1); }));
  for (const bool descending : {false, true}) {
    const fs::path other = dir_ / (descending ? "descending.json" : "ascending.json");
    ASSERT_TRUE(in_child([&] {
      std::vector<std::string> names;
      std::ifstream in(names_file);
      for (std::string line; std::getline(in, line);) names.push_back(line);
      if (descending) std::reverse(names.begin(), names.end());
      for (const std::string& n : names) intern_key(n);
      return infer(folders, other, 4);
    }));
    EXPECT_GT(slurp(natural).size(), 1000u);
    EXPECT_TRUE(slurp(natural) == slurp(other)) << "invariant files differ: " << other.filename();
    EXPECT_TRUE(slurp(natural.string() + ".failed") == slurp(other.string() + ".failed")) << "failed files differ: " << other.filename();
  }
}
