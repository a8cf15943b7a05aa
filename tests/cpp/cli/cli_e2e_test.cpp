// End to end: traincheck-infer on two good runs, traincheck-check on a buggy and a good run, outputs
// compared with golden files (tests/cpp/data/e2e/golden).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "check/check_command.h"
#include "golden_update.h"
#include "infer/infer_command.h"
#include "run_command.h"

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

void expect_golden(const fs::path& actual, const std::string& golden_name) {
  const fs::path golden = kData / "golden" / golden_name;
  if (golden_update_requested()) fs::copy_file(actual, golden, fs::copy_options::overwrite_existing);
  EXPECT_EQ(slurp(actual), slurp(golden)) << "differs from " << golden;
}

class CliEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() / ("tc_cli_e2e_" + std::to_string(::getpid()));
    fs::remove_all(out_);
    fs::create_directories(out_);
  }
  void TearDown() override { fs::remove_all(out_); }
  fs::path out_;
};

}  // namespace

TEST_F(CliEndToEnd, InferThenCheckFindsTheInjectedBugsAtTheirSteps) {
  std::string log;
  const std::string inv = (out_ / "invariants.json").string();
  // -j1: the original's spelling of the worker count (ours: --threads); the output is the same at any count.
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), (kData / "good_run2").string(), "-o", inv,
                                    "-b", "pandas", "-j1"},
                log),
            0)
      << log;
  expect_golden(inv, "invariants.json");
  ASSERT_TRUE(fs::exists(inv + ".failed"));

  const fs::path results = out_ / "results";
  ASSERT_EQ(run_command(run_check_command, {"traincheck-check", "-f", (kData / "buggy_run").string(), (kData / "good_run1").string(), "-i", inv,
                                    "-o", results.string(), "--num-workers", "2"},
                log),
            0)
      << log;
  expect_golden(results / "buggy_run" / "violations_summary.json", "buggy_run.violations_summary.json");
  // The console summary: per violated invariant its label, first and last step and count, earliest first.
  EXPECT_NE(log.find("[check] buggy_run: 11 invariants violated, the first at step 4:\n"
                     "  first step  last step  violations  invariant\n"
                     "           4          4           1  Adam.step() always calls _foreach_add_()\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("           5          5           1  Optimizer.zero_grad() changes Parameter.grad: non-zero --> None\n"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("[check] good_run1: 0 invariants violated"), std::string::npos) << log;  // nothing to summarise
  // The good run passes everything.
  EXPECT_EQ(slurp(results / "good_run1" / "failed.log"), "");
  EXPECT_NE(slurp(results / "good_run1" / "passed.log"), "");
  // failed.log: indent-4 objects with the violating parent pre-record (at step 4 for _foreach_add_).
  const std::string failed = slurp(results / "buggy_run" / "failed.log");
  EXPECT_NE(failed.find("\n    \"check_passed\": false,"), std::string::npos);
  EXPECT_NE(failed.find("\"meta_vars.step\": 4"), std::string::npos);
  EXPECT_NE(failed.find("\"meta_vars.step\": 5"), std::string::npos);
  const std::string html = slurp(results / "report.html");
  EXPECT_NE(html.find("Adam.step() always calls _foreach_add_()"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // The timeline: 8 invariants broken at step 4 and 3 at step 5, one mark each; the first bad step stated.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"tl-mark\""), 11u);
  EXPECT_EQ(count("data-step=\"4\""), 8u);
  EXPECT_EQ(count("<tr class=\"vrow\">"), 11u);
  EXPECT_NE(html.find("First bad step: <b class=\"first-bad-step\">4</b>"), std::string::npos);
  // Two traces checked: each row names its trace.
  EXPECT_NE(html.find("data-label=\"Adam.step() always calls _foreach_add_() [buggy_run]\""), std::string::npos);
  EXPECT_TRUE(fs::exists(results / "invariants.json"));
}

TEST_F(CliEndToEnd, RelationFiltersAndBadInputsFail) {
  std::string log;
  const std::string inv = (out_ / "inv.json").string();
  // Without the relations that hold on this single-thread run, nothing is learned.
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), "-o", inv, "--disable-relation",
                                    "APIContainRelation", "FunctionCoverRelation", "FunctionLeadRelation"},
                log),
            0);
  EXPECT_EQ(slurp(inv), "");
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), "-o", inv, "--enable-relation",
                                    "FunctionLeadRelation"},
                log),
            0);
  EXPECT_NE(slurp(inv), "");
  EXPECT_EQ(slurp(inv).find("APIContainRelation"), std::string::npos);
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), "--enable-relation", "NoSuchRelation"}, log), 2);
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "--bogus"}, log), 2);
  EXPECT_EQ(run_command(run_check_command, {"traincheck-check", "-f", (kData / "good_run1").string()}, log), 2);  // -i required
  // A malformed trace line in the middle is an error naming the file and line.
  const fs::path broken = out_ / "broken";
  fs::create_directories(broken);
  std::ofstream(broken / "trace_API_1_1.log") << "{\"a\":\n{\"b\":1}\n";
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", broken.string(), "-o", inv}, log), 1);
  EXPECT_NE(log.find("trace_API_1_1.log:1"), std::string::npos) << log;
}
