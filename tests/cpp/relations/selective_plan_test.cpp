#include "relations/selective_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "invariant/invariant.h"

using namespace traincheck;

namespace {

const std::string kData = TC_TEST_DATA_DIR;
const std::string kRepo = kData + "/../../..";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The expected plans are what the Python planner wrote before the plan moved here (its
// json.dump(indent=4) output, recompacted), with the variable types each invariant reads added: the C++
// plan must stay identical, key order included.
std::string expected(const std::string& name) {
  std::string text = slurp(kData + "/selective/" + name + ".instr_opts.json");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

TEST(SelectivePlan, MatchesThePythonPlannersOutputForEachInvariantFile) {
  const std::pair<const char*, std::string> cases[] = {
      {"api_contain_arguments_inverted", kRepo + "/fuzz/seeds/invariant/api_contain_arguments_inverted.json"},
      {"consistent_output_context_manager", kRepo + "/fuzz/seeds/invariant/consistent_output_context_manager.json"},
      {"threshold_distinct", kRepo + "/fuzz/seeds/invariant/threshold_distinct.json"},
      {"var_type_pre_post_failed", kRepo + "/fuzz/seeds/invariant/var_type_pre_post_failed.json"},
      {"e2e_golden", kData + "/e2e/golden/invariants.json"},
      {"deployed_100", kRepo + "/eval/perf_overhead/invariants/deployed_100.json"},
      {"original_format_invariants", kData + "/selective/original_format_invariants.json"},
      {"context_manager_invariants", kData + "/selective/context_manager_invariants.json"},
  };
  for (const auto& [name, file] : cases) EXPECT_EQ(instr_opts_json(build_selective_plan({file})), expected(name)) << name;
}

TEST(SelectivePlan, RecordNeedsComeFromTheRelationParamsAndPrecondition) {
  const SelectivePlan plan = build_selective_plan({kData + "/selective/context_manager_invariants.json"});
  const ApiRecordOptions& relu = plan.funcs.at("torch.nn.functional.relu");
  EXPECT_TRUE(relu.dump_ret);  // ConsistentOutput reads the result
  EXPECT_FALSE(relu.dump_args);
  const ApiRecordOptions& init = plan.funcs.at("torch.amp.autocast_mode.autocast.__init__");
  EXPECT_TRUE(init.dump_args);  // every argument: a precondition may read any
  EXPECT_TRUE(init.arg_names.empty());
  EXPECT_TRUE(plan.funcs.count("torch.amp.autocast_mode.autocast.__exit__"));
  ASSERT_EQ(plan.invariants.size(), 2u);
  EXPECT_EQ(plan.invariants[0].apis, std::vector<std::string>{"torch.nn.functional.relu"});
}

TEST(SelectivePlan, MalformedInvariantsNameFileLineAndField) {
  const auto path = std::filesystem::temp_directory_path() / ("tc_selective_bad_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << "\n{\"relation\": \"APIContainRelation\", \"params\": []}\n";
  try {
    build_selective_plan({path.string()});
    FAIL() << "expected InvariantFormatError";
  } catch (const InvariantFormatError& e) {
    EXPECT_EQ(e.line, 2u);
    EXPECT_EQ(e.field, "params");
  }
  std::ofstream(path) << "{\"relation\": \"MadeUpRelation\", \"params\": []}\n";
  EXPECT_THROW(build_selective_plan({path.string()}), InvariantFormatError);
  std::filesystem::remove(path);
}
