#include "invariant/invariant.h"
#include "relations/registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace traincheck;

namespace {

// An invariant the original wrote (docs/formats.md §Example invariant).
const char* kZeroGrad =
    R"({"text_description": "TBD merged", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"}, {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "grad", "pre_value": "non_zero", "post_value": null}], "precondition": {"parent_func_call_pre": {"inverted": true, "preconditions": [{"clauses": [{"type": "constant", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int", "values": [0]}]}, {"clauses": [{"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str", "values": ["testing", "init"]}]}]}}, "num_positive_examples": 20, "num_negative_examples": 1})";

// Invariants the original wrote: an APIContain child with argument constraints and a ConsistentOutput
// precondition with context-manager clauses (docs/formats.md §Params, §Preconditions).
const char* kDropout =
    R"({"text_description": "x", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.nn.modules.dropout.Dropout.forward"}, {"param_type": "APIParam", "api_full_name": "torch.nn.functional.dropout", "arguments": {"args": {"training": {"bool": true}, "inplace": {"bool": false}}, "func_name": "torch.nn.functional.dropout"}}], "precondition": {"parent_func_call_pre": {"inverted": true, "preconditions": [{"clauses": [{"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str", "values": ["evaluation"]}]}]}}, "num_positive_examples": 3, "num_negative_examples": 2})";
const char* kRelu =
    R"({"text_description": "relu", "relation": "ConsistentOutputRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"}, {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float16"}], "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": [{"type": "constant", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", "additional_path": ["dtype"], "prop_dtype": "str", "values": ["torch.float16"]}, {"type": "exist", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", "additional_path": "None", "prop_dtype": "None"}]}]}}, "num_positive_examples": 503, "num_negative_examples": 497})";

}  // namespace

TEST(InvariantCodec, RealExampleRoundTripsByteForByte) {
  for (const char* text : {kZeroGrad, kDropout, kRelu}) {
    Invariant inv = invariant_from_json(text);
    EXPECT_EQ(inv.to_json_line(), text);
  }
}

TEST(InvariantCodec, AbsentAndNullParamValuesAreDifferent) {
  Invariant inv = invariant_from_json(kZeroGrad);
  const Param& child = inv.params[1];
  ASSERT_TRUE(child.pre_value.has_value());
  EXPECT_EQ(child.pre_value->as_string(), "non_zero");
  ASSERT_TRUE(child.post_value.has_value());  // null: the value None
  EXPECT_TRUE(child.post_value->is_null());
  EXPECT_FALSE(child.const_value.has_value());  // absent: unconstrained
  const PreconditionGroup* g = inv.precondition->find("parent_func_call_pre");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->inverted);
  EXPECT_TRUE(g->disjuncts[0].clauses[0].additional_path.is_null());  // "None" string
}

TEST(InvariantCodec, IdentityIsRelationAndParamsOnly) {
  Invariant a = invariant_from_json(kZeroGrad);
  Invariant b = a;
  b.text_description = "other";
  b.precondition.reset();
  b.num_positive_examples = 1;
  EXPECT_EQ(a.identity(), b.identity());
  b.params[1].post_value.reset();
  EXPECT_NE(a.identity(), b.identity());
}

TEST(InvariantCodec, AllEightRelationNamesLoadAndUnknownIsAnErrorWithFileAndLine) {
  for (const std::string& rel : relation_names()) {
    const std::string text = "{\"relation\": \"" + rel + "\", \"params\": [{\"param_type\": \"InputOutputParam\", \"name\": "
                             "\"input_tensors\", \"index\": 0, \"type\": \"torch.Tensor\", \"additional_path\": [\"shape\", 0], "
                             "\"api_name\": \"f\", \"is_input\": true}], \"precondition\": {\"pre_event\": {\"inverted\": false, "
                             "\"preconditions\": [{\"clauses\": \"Unconditional\"}]}}, \"num_positive_examples\": null, "
                             "\"num_negative_examples\": null}";
    Invariant inv = invariant_from_json(text);
    EXPECT_EQ(inv.relation, rel);
    EXPECT_FALSE(inv.num_positive_examples.has_value());
    EXPECT_TRUE(inv.precondition->groups[0].second.disjuncts[0].unconditional);
  }
  const auto path = std::filesystem::temp_directory_path() / ("tc_bad_invariants_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << kZeroGrad << "\n\n" << "{\"relation\": \"MadeUpRelation\", \"params\": []}\n";
  try {
    read_invariant_file(path.string(), relation_names());
    FAIL() << "expected InvariantFormatError";
  } catch (const InvariantFormatError& e) {
    EXPECT_EQ(e.line, 3u);
    EXPECT_EQ(e.field, "relation");
    EXPECT_NE(std::string(e.what()).find("MadeUpRelation"), std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST(InvariantCodec, BadParamNamesTheField) {
  try {
    invariant_from_json(R"({"relation": "APIContainRelation", "params": [{"param_type": "APIParam"}]})", "inv.json", 7);
    FAIL();
  } catch (const InvariantFormatError& e) {
    EXPECT_EQ(e.field, "params[0].api_full_name");
    EXPECT_EQ(e.line, 7u);
  }
  try {
    invariant_from_json(R"({"relation": "APIContainRelation", "params": [], "precondition": {"g": {"inverted": false, "preconditions": [{"clauses": [{"type": "sometimes", "prop_name": "x"}]}]}}})");
    FAIL();
  } catch (const InvariantFormatError& e) {
    EXPECT_EQ(e.field, "precondition.g.preconditions[0].clauses[0].type");
  }
}

TEST(InvariantCodec, WrittenFilesAreSortedByDescriptionAndReadBack) {
  std::vector<Invariant> invs = {invariant_from_json(kZeroGrad), invariant_from_json(kDropout), invariant_from_json(kRelu)};
  const auto path = std::filesystem::temp_directory_path() / ("tc_written_invariants_" + std::to_string(::getpid()) + ".json");
  write_invariant_file(path.string(), invs);
  std::vector<Invariant> back = read_invariant_file(path.string(), relation_names());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].text_description, "TBD merged");
  EXPECT_EQ(back[1].text_description, "relu");
  EXPECT_EQ(back[2].text_description, "x");
  EXPECT_EQ(back[1].to_json_line(), kRelu);
  std::filesystem::remove(path);
}

// The -i merge of traincheck-check and the online checkers: file order, an invariant met again by identity
// (relation and params; a different description or precondition does not matter) kept once, the first.
TEST(InvariantCodec, ReadingSeveralFilesKeepsEachIdentityOnceTheFirst) {
  const std::string tmp = std::filesystem::temp_directory_path() / ("tc_merge_" + std::to_string(::getpid()));
  Invariant renamed = invariant_from_json(kZeroGrad);
  renamed.text_description = "the same invariant, described again";
  std::ofstream(tmp + "_a.json") << kZeroGrad << "\n" << kDropout << "\n";
  std::ofstream(tmp + "_b.json") << kRelu << "\n" << renamed.to_json_line() << "\n" << kDropout << "\n";
  const std::vector<Invariant> merged = read_invariant_files({tmp + "_a.json", tmp + "_b.json", tmp + "_a.json"}, relation_names());
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].to_json_line(), kZeroGrad);
  EXPECT_EQ(merged[1].to_json_line(), kDropout);
  EXPECT_EQ(merged[2].to_json_line(), kRelu);
  EXPECT_TRUE(read_invariant_files({}, relation_names()).empty());
  std::filesystem::remove(tmp + "_a.json");
  std::filesystem::remove(tmp + "_b.json");
}

TEST(ParamValues, GeneralisedTokensMatchAndGeneralise) {
  EXPECT_TRUE(value_matches(Value::string("non_zero"), Value::integer(-5)));
  EXPECT_FALSE(value_matches(Value::string("non_zero"), Value::integer(0)));
  EXPECT_FALSE(value_matches(Value::string("non_zero"), Value::null()));
  EXPECT_TRUE(value_matches(Value::string("anything"), Value::null()));
  EXPECT_FALSE(value_matches(Value::string("non_none"), Value::null()));
  EXPECT_TRUE(value_matches(Value::real(2.0), Value::integer(2)));
  EXPECT_EQ(generalize_values({Value::integer(1), Value::integer(3)}).as_string(), "above_zero");
  EXPECT_EQ(generalize_values({Value::integer(0), Value::integer(3)}).as_string(), "non_negative");
  EXPECT_EQ(generalize_values({Value::integer(-1), Value::integer(-3)}).as_string(), "below_zero");
  EXPECT_EQ(generalize_values({Value::integer(-1), Value::integer(0)}).as_string(), "non_positive");
  EXPECT_EQ(generalize_values({Value::integer(-1), Value::integer(3)}).as_string(), "non_zero");
  EXPECT_EQ(generalize_values({Value::integer(-1), Value::integer(0), Value::integer(3)}).as_string(), "non_none");
  EXPECT_EQ(generalize_values({Value::string("a"), Value::string("b")}).as_string(), "non_none");
  EXPECT_EQ(generalize_values({Value::string("a"), Value::null()}).as_string(), "anything");
  EXPECT_EQ(short_api_name("torch.optim.optimizer.Optimizer.zero_grad"), "Optimizer.zero_grad");
  EXPECT_EQ(short_api_name("torch.optim.adam.adam"), "adam");
  EXPECT_EQ(display_value(Value::string("non_zero")), "non-zero");
}
