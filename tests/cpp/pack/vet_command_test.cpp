// traincheck-vet's input errors (pack/vet_command.h): each names the program and folder involved, empty
// inputs are refused, and output folders are checked before anything is written.
#include "pack/vet_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "run_command.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;

namespace {

const char* kCandidate =
    R"({"text_description": "zero_grad leads step", "relation": "FunctionLeadRelation", "params": [{"param_type": "APIParam", "api_full_name": "zero_grad"}, {"param_type": "APIParam", "api_full_name": "step"}], "precondition": {"func_lead": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})";

struct VetInputs {
  fs::path dir = scratch::empty_dir("vet_command");
  fs::path candidates = dir / "candidates.json";
  fs::path checked = dir / "checked";
  VetInputs() {
    std::ofstream(candidates) << kCandidate << "\n";
    fs::create_directories(checked);  // a check folder with no result for the candidate
  }
  fs::path programs(const std::string& lines) const {
    const fs::path p = dir / "programs.jsonl";
    std::ofstream(p) << lines;
    return p;
  }
  std::string program_line(const std::string& name, const fs::path& checked_folder) const {
    return R"({"name": ")" + name + R"(", "family": "mlp", "learned": ")" + candidates.string() + R"(", "checked": ")" +
           checked_folder.string() + "\"}\n";
  }
};

int vet(const std::vector<std::string>& args, std::string& log) {
  std::vector<std::string> argv = {"traincheck-vet"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(traincheck::run_vet_command, argv, log);
}

}  // namespace

TEST(VetCommand, AnEmptyProgramsFileIsRefusedAndNoPackWritten) {
  VetInputs in;
  std::string log;
  const fs::path pack = in.dir / "pack.json";
  EXPECT_NE(vet({"--candidates", in.candidates.string(), "--programs", in.programs("").string(), "-o", pack.string()}, log), 0);
  EXPECT_NE(log.find("programs.jsonl: no program listed"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(pack));
}

TEST(VetCommand, AProgramWithoutResultsIsNamedWithItsFolder) {
  VetInputs in;
  std::string log;
  const fs::path programs = in.programs(in.program_line("mlp_a", in.checked));
  EXPECT_EQ(vet({"--candidates", in.candidates.string(), "--programs", programs.string(), "-o", (in.dir / "p.json").string()}, log), 1);
  EXPECT_NE(log.find("program 'mlp_a' (checked folder " + in.checked.string() + "): 1 of 1 candidates have no check result"),
            std::string::npos) << log;

  const fs::path missing = in.dir / "nowhere";
  EXPECT_EQ(vet({"--candidates", in.candidates.string(), "--programs", in.programs(in.program_line("mlp_b", missing)).string(),
                 "-o", (in.dir / "p.json").string()}, log), 1);
  EXPECT_NE(log.find("program 'mlp_b': checked folder '" + missing.string() + "' does not exist"), std::string::npos) << log;
}

TEST(VetCommand, AReportIntoAMissingFolderIsRefusedBeforeThePackIsWritten) {
  VetInputs in;
  std::string log;
  const fs::path pack = in.dir / "pack.json";
  EXPECT_EQ(vet({"--candidates", in.candidates.string(), "--programs", in.programs(in.program_line("mlp_a", in.checked)).string(),
                 "-o", pack.string(), "--report", (in.dir / "absent" / "report.json").string()}, log), 2);
  EXPECT_NE(log.find("--report"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(pack));
}
