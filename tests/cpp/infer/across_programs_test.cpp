// Learning across programs (infer/across_programs.h, docs/analysis.md §Learning across programs): which
// trace folders are one program, and traincheck-infer vetting what it learns from several.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "check/check_command.h"
#include "infer/across_programs.h"
#include "infer/infer_command.h"
#include "run_command.h"
#include "invariant/invariant.h"
#include "pack/check_outcomes.h"
#include "relations/registry.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

const fs::path kData = fs::path(TC_TEST_DATA_DIR) / "e2e";

void write_env_dump(const fs::path& folder, const std::string& pyscript, const std::string& shscript, const std::string& pwd) {
  std::ofstream(folder / "env_dump.txt") << "Arguments:\nconfig: None\npyscript: " << pyscript << "\nshscript: " << shscript
                                         << "\nwarm_up_steps: 1\n\nEnvironment Variables:\nHOME: /root\nPWD: " << pwd
                                         << "\n\nPython Version:\n3.11.7\n";
}

// A copy of a test trace folder collected from `script` (run from /work).
fs::path trace_of(const std::string& source, const std::string& name, const std::string& script) {
  const fs::path dir = scratch::fresh_path(name);
  fs::copy(kData / source, dir, fs::copy_options::recursive);
  if (!script.empty()) write_env_dump(dir, script, "None", "/work");
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(ProgramOfTraceFolder, IsTheScriptItsEnvDumpNamesMadeAbsolute) {
  const fs::path dir = scratch::empty_dir("program_of");
  EXPECT_EQ(program_of_trace_folder(dir.string()), "");  // no env_dump.txt: unknown
  write_env_dump(dir, "train.py", "None", "/home/u/projA");
  EXPECT_EQ(program_of_trace_folder(dir.string()), "/home/u/projA/train.py");
  write_env_dump(dir, "/abs/./train.py", "None", "/home/u/projA");
  EXPECT_EQ(program_of_trace_folder(dir.string()), "/abs/train.py");
  write_env_dump(dir, "None", "run.sh", "/home/u/projB");  // a launcher script, no Python one
  EXPECT_EQ(program_of_trace_folder(dir.string()), "/home/u/projB/run.sh");
  write_env_dump(dir, "None", "None", "/home/u");
  EXPECT_EQ(program_of_trace_folder(dir.string()), "");
  // Written on Windows: the line ends are not part of the names.
  std::ofstream(dir / "env_dump.txt") << "Arguments:\r\npyscript: None\r\nshscript: run.sh\r\n\r\nEnvironment Variables:\r\nPWD: /w\r\n";
  EXPECT_EQ(program_of_trace_folder(dir.string()), "/w/run.sh");
}

TEST(InferAcrossPrograms, KeepsNothingAnotherProgramViolates) {
  // good_run1 and buggy_run as two programs: what good_run1 alone teaches and buggy_run breaks (eleven
  // invariants, cli_e2e_test) is a candidate that the other program violates, so it is not kept.
  std::string log;
  const fs::path out = scratch::empty_dir("across_violated");
  const std::string alone = (out / "alone.json").string();
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), "-o", alone}, log), 0) << log;
  ASSERT_EQ(run_command(run_check_command, {"traincheck-check", "-f", (kData / "buggy_run").string(), "-i", alone, "-o",
                                    (out / "check").string(), "--no-html-report"},
                log),
            0)
      << log;
  std::set<std::string> violated;
  for (const auto& [identity, outcome] : read_check_outcomes((out / "check" / "buggy_run").string()))
    if (outcome == CheckOutcome::Violated) violated.insert(identity);
  ASSERT_EQ(violated.size(), 11u);

  const fs::path a = trace_of("good_run1", "prog_a", "a.py"), b = trace_of("buggy_run", "prog_b", "b.py");
  const std::string across = (out / "across.json").string();
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), b.string(), "-o", across}, log), 0) << log;
  EXPECT_NE(log.find("[infer] learned across 2 programs: "), std::string::npos) << log;
  const std::vector<Invariant> kept = read_invariant_file(across, relation_names());
  ASSERT_FALSE(kept.empty());
  for (const Invariant& inv : kept) {
    EXPECT_EQ(inv.held_on_programs, 2) << inv.text_description.str();  // passed on both
    EXPECT_EQ(violated.count(inv.identity()), 0u) << inv.text_description.str();
  }
  // The report says why each candidate went; those buggy_run violates went for that.
  const std::string report = slurp(across + ".vetting.json");
  EXPECT_NE(report.find("\"verdict\": \"violated on a correct program\""), std::string::npos);
  EXPECT_NE(report.find("\"description\": \"torch.optim.adam.Adam.step contains"), std::string::npos);
}

TEST(InferAcrossPrograms, RunsOfOneScriptArePooledAsBefore) {
  // Two runs of one script (the same-pipeline setting): inference pools them, the file the same as with
  // no env_dump.txt at all, no vetting report written.
  std::string log;
  const fs::path out = scratch::empty_dir("across_same");
  const std::string plain = (out / "plain.json").string(), same = (out / "same.json").string();
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", (kData / "good_run1").string(), (kData / "good_run2").string(), "-o", plain}, log), 0)
      << log;
  const fs::path a = trace_of("good_run1", "same_a", "train.py"), b = trace_of("good_run2", "same_b", "/work/train.py");
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), b.string(), "-o", same}, log), 0) << log;
  EXPECT_EQ(log.find("learned across"), std::string::npos) << log;
  EXPECT_EQ(slurp(same), slurp(plain));
  EXPECT_FALSE(fs::exists(same + ".vetting.json"));
  // --across-programs off pools traces of two scripts too.
  const fs::path c = trace_of("good_run2", "other_c", "other.py");
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), c.string(), "-o", same, "--across-programs", "off"}, log), 0) << log;
  EXPECT_EQ(slurp(same), slurp(plain));
}

TEST(InferAcrossPrograms, FoldersNamingNoScriptArePooledUnlessAskedOtherwise) {
  std::string log;
  const fs::path out = scratch::empty_dir("across_unknown");
  const fs::path a = trace_of("good_run1", "unknown_a", "a.py"), b = trace_of("good_run2", "unknown_b", "");
  const std::string inv = (out / "inv.json").string();
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), b.string(), "-o", inv}, log), 0) << log;
  EXPECT_NE(log.find("1 trace(s) name no script (their env_dump.txt is missing or names none): the traces are pooled"), std::string::npos) << log;
  EXPECT_EQ(log.find("learned across"), std::string::npos) << log;
  // on: each such folder is a program of its own.
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), b.string(), "-o", inv, "--across-programs", "on"}, log), 0) << log;
  EXPECT_NE(log.find("[infer] learned across 2 programs: "), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(inv + ".vetting.json"));
  // Pooled again into the same file: the report of the earlier run goes with the invariants it was about.
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), b.string(), "-o", inv}, log), 0) << log;
  EXPECT_FALSE(fs::exists(inv + ".vetting.json"));
}

TEST(InferAcrossPrograms, BadSettingsAreRefusedNamingTheOption) {
  std::string log;
  const fs::path out = scratch::empty_dir("across_bad");
  const std::string inv = (out / "inv.json").string(), one = (kData / "good_run1").string();
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", one, "-o", inv, "--across-programs", "maybe"}, log), 2);
  EXPECT_NE(log.find("--across-programs takes auto, on or off, got 'maybe'"), std::string::npos) << log;
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", one, "-o", inv, "--min-programs", "0"}, log), 2);
  EXPECT_NE(log.find("--min-programs a positive one"), std::string::npos) << log;
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", one, "-o", inv, "--min-programs", "2x"}, log), 2);
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", one, "-o", inv, "--across-programs", "on"}, log), 2);
  EXPECT_NE(log.find("--across-programs on needs traces of two programs or more"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(inv));
}

TEST(InferAcrossPrograms, OneFolderNamedTwiceIsOneProgramAndTooHighAMinimumIsSaid) {
  std::string log;
  const fs::path out = scratch::empty_dir("across_twice");
  const fs::path a = trace_of("good_run1", "twice_a", "");
  const std::string inv = (out / "inv.json").string();
  // `x` and `x/.` are one folder: one program, which --across-programs on refuses.
  EXPECT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", a.string(), (a / ".").string(), "-o", inv, "--across-programs", "on"}, log), 2)
      << log;
  const fs::path b = trace_of("good_run2", "twice_b", "b.py"), c = trace_of("good_run1", "twice_c", "c.py");
  ASSERT_EQ(run_command(run_infer_command, {"traincheck-infer", "-f", b.string(), c.string(), "-o", inv, "--min-programs", "3"}, log), 0) << log;
  EXPECT_NE(log.find("--min-programs 3 is more than the 2 programs given"), std::string::npos) << log;
}
