#include "relations/api_contain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "case_trace.h"
#include "infer/engine.h"
#include "relations/registry.h"
#include "testing/synthetic_trace.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

TraceStore synthetic(const std::string& name, SyntheticTraceSpec spec) {
  const fs::path dir = fs::temp_directory_path() / ("tc_api_contain_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_synthetic_trace(dir.string(), spec);
  TraceStore t = TraceStore::load_folder(dir.string());
  fs::remove_all(dir);
  return t;
}

std::map<std::string, const Hypothesis*> by_description(const std::vector<Hypothesis>& hs) {
  std::map<std::string, const Hypothesis*> out;
  for (const Hypothesis& h : hs) out[h.invariant.text_description.str()] = &h;
  return out;
}

Invariant adam_step_contains_foreach_add() {
  Invariant inv;
  inv.relation = "APIContainRelation";
  inv.params = {Param::api("torch.optim.adam.Adam.step"), Param::api("torch._VariableFunctionsClass._foreach_add_")};
  return inv;
}

}  // namespace

TEST(ApiContain, GeneratesApiAndVarChildrenWithExamples) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  spec.eval_every = 3;
  TraceStore t = synthetic("gen", spec);
  ApiContainRelation rel;
  // One hypothesis per stage, combined over the stages whose argument constraints agree.
  std::vector<Hypothesis> generated = rel.generate(t);
  rel.combine(generated);
  auto hs = by_description(generated);
  // Private and functional APIs are never parents.
  for (const auto& [d, h] : hs) {
    EXPECT_EQ(d.find("torch._C._nn.linear contains"), std::string::npos);
    EXPECT_EQ(d.find("torch.nn.functional.relu contains"), std::string::npos);
  }
  const std::string foreach_key = "torch.optim.adam.Adam.step contains torch._VariableFunctionsClass._foreach_add_({\"alpha\":{\"int\":1}})";
  ASSERT_TRUE(hs.count(foreach_key)) << "missing: " << foreach_key;
  const Hypothesis& foreach_h = *hs[foreach_key];
  EXPECT_EQ(foreach_h.positives.size(), 6u);
  EXPECT_EQ(foreach_h.negatives.size(), 0u);
  EXPECT_EQ(foreach_h.valid_stages, std::vector<std::string>{"training"});
  EXPECT_EQ(foreach_h.group_names, std::vector<std::string>{"parent_func_call_pre"});

  // Linear.forward runs in training and testing, always calling linear.
  const Hypothesis& linear = *hs.at("torch.nn.modules.linear.Linear.forward contains torch._C._nn.linear");
  EXPECT_EQ(linear.positives.size(), 6u * 2 + 2u * 2);
  EXPECT_EQ(linear.valid_stages, (std::vector<std::string>{"testing", "training"}));

  // zero_grad's grad resets merge into one generalised hypothesis; the first zero_grad (no grads yet)
  // is its negative.
  const std::string zg = "torch.optim.optimizer.Optimizer.zero_grad contains a change of torch.nn.Parameter.grad from \"non_zero\" to null";
  ASSERT_TRUE(hs.count(zg));
  EXPECT_EQ(hs[zg]->positives.size(), 5u);
  EXPECT_EQ(hs[zg]->negatives.size(), 1u);
  const Param& child = hs[zg]->invariant.params[1];
  EXPECT_EQ(child.type, ParamType::VarType);
  EXPECT_TRUE(child.post_value->is_null());
}

TEST(ApiContain, CheckFindsTheMissingChildAtItsStepAndPassesOnGoodTraces) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  TraceStore good = synthetic("good", spec);
  spec.skip_foreach_add_at = 4;
  TraceStore bad = synthetic("bad", spec);
  Invariant inv = adam_step_contains_foreach_add();
  ApiContainRelation rel;
  CheckResult ok = rel.check(good, inv, {});
  EXPECT_TRUE(ok.triggered);
  EXPECT_TRUE(ok.passed());
  CheckResult fail = rel.check(bad, inv, {});
  EXPECT_TRUE(fail.triggered);
  ASSERT_EQ(fail.violation_count, 1u);
  const Record& r = bad.record(fail.violations[0].records[0]);
  EXPECT_EQ(r.function, "torch.optim.adam.Adam.step");
  EXPECT_EQ(r.step, 4);

  // Argument constraints are part of the match.
  Invariant with_args = inv;
  with_args.params[1].arguments = make_object({{"args", make_object({{"alpha", make_object({{"int", Value::integer(2)}})}})},
                                               {"func_name", Value::string("torch._VariableFunctionsClass._foreach_add_")}});
  EXPECT_EQ(rel.check(good, with_args, {}).violation_count, 6u);

  // A precondition that never holds leaves the invariant not triggered.
  Invariant never = inv;
  GroupedPreconditions pre;
  PreconditionGroup g;
  g.disjuncts.push_back(Conjunction{false, {Clause::make(ClauseType::Constant, "meta_vars.stage", "str", {Value::string("inference")})}});
  pre.groups.emplace_back("parent_func_call_pre", g);
  never.precondition = pre;
  CheckResult nt = rel.check(bad, never, {});
  EXPECT_FALSE(nt.triggered);
  EXPECT_TRUE(nt.passed());
  // --check-relation-first gives the same outcome.
  CheckOptions first;
  first.check_relation_first = true;
  EXPECT_EQ(rel.check(bad, inv, first).violation_count, 1u);
}

TEST(ApiContain, VarChildMatchesGeneralisedValues) {
  SyntheticTraceSpec spec;
  spec.iterations = 4;
  spec.skip_zero_grad_reset_at = 3;
  TraceStore t = synthetic("var", spec);
  Invariant inv;
  inv.relation = "APIContainRelation";
  Param child = Param::var_type_param("torch.nn.Parameter", "grad");
  child.pre_value = Value::string("non_zero");
  child.post_value = Value::null();
  inv.params = {Param::api("torch.optim.optimizer.Optimizer.zero_grad"), child};
  ApiContainRelation rel;
  CheckResult r = rel.check(t, inv, {});
  // Step 1 (no grads yet) and step 3 (bug) lack the reset.
  ASSERT_EQ(r.violation_count, 2u);
  EXPECT_EQ(t.record(r.violations[0].records[0]).step, 1);
  EXPECT_EQ(t.record(r.violations[1].records[0]).step, 3);
  EXPECT_EQ(rel.display_name(inv), "Optimizer.zero_grad() changes Parameter.grad: non-zero --> None");
}

TEST(ApiContain, CollectExamplesOnAnotherTraceUsesTheChildMatch) {
  SyntheticTraceSpec spec;
  spec.iterations = 3;
  TraceStore a = synthetic("a", spec);
  spec.iterations = 5;
  spec.skip_foreach_add_at = 2;
  TraceStore b = synthetic("b", spec);
  ApiContainRelation rel;
  for (Hypothesis& h : rel.generate(a)) {
    if (h.invariant.params[1].api_full_name != "torch._VariableFunctionsClass._foreach_add_" ||
        h.invariant.params[0].api_full_name != "torch.optim.adam.Adam.step")
      continue;
    rel.collect_examples(b, h);
    EXPECT_EQ(h.positives.size(), 3u + 4u);
    EXPECT_EQ(h.negatives.size(), 1u);
    return;
  }
  FAIL() << "hypothesis not generated";
}

namespace {

Value json(const std::string& text) {
  Value v;
  std::string error;
  EXPECT_TRUE(parse_json(text, v, error)) << error;
  return v;
}

}  // namespace

TEST(ApiContain, ChildArgumentsWrittenByTheOriginalWithSelfMatchOurRecords) {
  // The original's invariant files put `self` into a method child's argument constraints
  // (docs/relations.md §APIContainRelation).
  const Param child = param_from_value(json(
      R"j({"param_type":"APIParam","api_full_name":"torch.library.Library.impl","arguments":{"args":)j"
      R"j({"self":{"torch.library.Library":{}},"op_name":{"str":"add"}},"func_name":"torch.library.Library.impl"}})j"));
  const RawTrace raw = read_trace_text(
      "trace_API_1_1.log",
      R"j({"func_call_id":"a_1","thread_id":1,"process_id":1,"meta_vars":{"step":1},"type":"function_call (pre)",)j"
      R"j("function":"torch.library.Library.impl","is_bound_method":true,"obj_id":5,)j"
      R"j("args":{"0":{"torch.library.Library":{}},"1":{"str":"add"}},"kwargs":{},"time":10})j"
      "\n");
  ASSERT_EQ(raw.records.size(), 1u);
  const ApiSignatures signatures = ApiSignatures::from_value(
      json(R"j({"torch.library.Library.impl":{"params":[{"name":"self"},{"name":"op_name"}]}})j"), "test");
  EXPECT_TRUE(ApiContainRelation::api_call_matches(child, raw.records[0], signatures));
  const Param other = param_from_value(json(
      R"j({"param_type":"APIParam","api_full_name":"torch.library.Library.impl","arguments":{"args":)j"
      R"j({"op_name":{"str":"mul"}},"func_name":"torch.library.Library.impl"}})j"));
  EXPECT_FALSE(ApiContainRelation::api_call_matches(other, raw.records[0], signatures));
}

TEST(ApiContain, InferredArgumentConstraintsNeverUsePositionIndexesAsNames) {
  // Without api_signatures.json a positional argument has no name: it must not become a "0" constraint.
  const fs::path dir = fs::temp_directory_path() / ("tc_api_contain_positional_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text;
  long t = 0;
  auto rec = [&](const std::string& id, const std::string& type, const std::string& fn, const std::string& extra) {
    text += R"j({"func_call_id":")j" + id + R"j(","thread_id":1,"process_id":1,"meta_vars":{"step":1,"stage":"training"},"type":")j" +
            type + R"j(","function":")j" + fn + R"j(","is_bound_method":false,"obj_id":null)j" + extra +
            ",\"time\":" + std::to_string(++t) + "}\n";
  };
  for (int i = 0; i < 3; ++i) {
    const std::string p = "p" + std::to_string(i), c = "c" + std::to_string(i);
    rec(p, "function_call (pre)", "torch.foo.Runner.run", R"j(,"args":{},"kwargs":{})j");
    rec(c, "function_call (pre)", "torch.foo.helper", R"j(,"args":{"0":{"int":3}},"kwargs":{"k":{"int":1}})j");
    rec(c, "function_call (post)", "torch.foo.helper", "");
    rec(p, "function_call (post)", "torch.foo.Runner.run", "");
  }
  { std::ofstream(dir / "trace_API_1_1.log") << text; }
  TraceStore trace = TraceStore::load_folder(dir.string());
  fs::remove_all(dir);
  bool found = false;
  for (const Hypothesis& h : ApiContainRelation().generate(trace)) {
    const Param& child = h.invariant.params.back();
    if (child.api_full_name != "torch.foo.helper") continue;
    found = true;
    ASSERT_TRUE(child.arguments && child.arguments->is_object()) << h.invariant.text_description;
    const Value* args = child.arguments->find("args");
    ASSERT_NE(args, nullptr);
    ASSERT_EQ(args->as_object().size(), 1u) << h.invariant.text_description;
    EXPECT_EQ(key_name(args->as_object().front().key), "k");
  }
  EXPECT_TRUE(found);
}

namespace {

constexpr const char* kDropoutForward = "torch.nn.modules.dropout.Dropout.forward";
// The `training` constraint of an APIContain child (nullptr if it has none).
const Value* training_arg(const Param& child) {
  if (!child.arguments || !child.arguments->is_object()) return nullptr;
  const Value* args = child.arguments->find("args");
  return args != nullptr ? args->find("training") : nullptr;
}

}  // namespace

// Training steps of Dropout.forward calling dropout(training=True), a validation pass calling it with
// training=False after step 3. What is learned from such runs and caught when the model stays in eval
// mode: relation_cases/api_contain/model_left_in_eval_mode and argument_set_seen_in_different_stages.
TEST(ApiContain, ChildArgumentsThatDifferByStageAreSeparateStageRestrictedHypotheses) {
  const TraceStore good = load_case_trace("api_contain/model_left_in_eval_mode/infer/run1.jsonl");
  std::map<bool, const Hypothesis*> by_training;
  const ApiContainRelation rel;
  std::vector<Hypothesis> generated = rel.generate(good);
  rel.combine(generated);
  for (const Hypothesis& h : generated) {
    if (h.invariant.params[0].api_full_name != kDropoutForward) continue;
    const Value* training = training_arg(h.invariant.params[1]);
    ASSERT_NE(training, nullptr) << h.invariant.text_description;
    by_training[training->find("bool")->as_bool()] = &h;
  }
  ASSERT_EQ(by_training.size(), 2u);
  EXPECT_EQ(by_training[true]->valid_stages, std::vector<std::string>{"training"});
  EXPECT_EQ(by_training[true]->positives.size(), 6u);
  EXPECT_EQ(by_training[true]->negatives.size(), 0u);
  EXPECT_EQ(by_training[false]->valid_stages, std::vector<std::string>{"testing"});
  EXPECT_EQ(by_training[false]->positives.size(), 2u);
}

TEST(ApiContain, PerVariableChildCatchesAnOptimizerThatStopsUpdatingOneParameter) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  TraceStore good = synthetic("per_var_good", spec);
  spec.detach_first_param_from = 4;
  TraceStore bad = synthetic("per_var_bad", spec);
  ApiContainRelation rel;
  const std::vector<Hypothesis> generated = rel.generate(good);
  auto hs = by_description(generated);
  // Every step changes each parameter: one hypothesis per parameter, its data digest unconstrained.
  const std::string layer0 = "torch.optim.adam.Adam.step contains a change of torch.nn.Parameter[model.layer0.weight].data from * to *";
  ASSERT_TRUE(hs.count(layer0)) << "missing: " << layer0;
  EXPECT_EQ(hs[layer0]->positives.size(), 6u);
  EXPECT_EQ(hs[layer0]->negatives.size(), 0u);
  EXPECT_EQ(hs[layer0]->invariant.params[1].type, ParamType::VarName);
  EXPECT_EQ(rel.display_name(hs[layer0]->invariant), "Adam.step() changes model.layer0.weight.data: anything --> anything");
  // zero_grad always sets each grad to None: that value is kept.
  const std::string reset = "torch.optim.optimizer.Optimizer.zero_grad contains a change of torch.nn.Parameter[model.layer1.weight].grad from * to null";
  ASSERT_TRUE(hs.count(reset)) << "missing: " << reset;

  // The type-level child passes (other parameters still change); the per-variable one flags step 4.
  Invariant type_level;
  type_level.relation = "APIContainRelation";
  type_level.params = {Param::api("torch.optim.adam.Adam.step"), Param::var_type_param("torch.nn.Parameter", "data")};
  EXPECT_TRUE(rel.check(bad, type_level, {}).passed());
  CheckResult r = rel.check(bad, hs[layer0]->invariant, {});
  ASSERT_EQ(r.violation_count, 3u);  // steps 4, 5, 6
  EXPECT_EQ(bad.record(r.violations[0].records[0]).step, 4);
  EXPECT_TRUE(rel.check(good, hs[layer0]->invariant, {}).passed());
}

TEST(ApiContain, PerVariableChildIsNotJudgedWhereTheVariableIsAbsent) {
  SyntheticTraceSpec spec;
  spec.iterations = 4;
  TraceStore four_params = synthetic("per_var_four", spec);
  spec.params = 2;
  TraceStore two_params = synthetic("per_var_two", spec);
  ApiContainRelation rel;
  const std::vector<Hypothesis> generated = rel.generate(four_params);
  auto hs = by_description(generated);
  const std::string layer3 = "torch.optim.adam.Adam.step contains a change of torch.nn.Parameter[model.layer3.weight].data from * to *";
  ASSERT_TRUE(hs.count(layer3));
  // Another program (no model.layer3.weight): not triggered, no violation, and no examples that would
  // make the invariant look false when inferring from several programs.
  CheckResult r = rel.check(two_params, hs[layer3]->invariant, {});
  EXPECT_FALSE(r.triggered);
  EXPECT_TRUE(r.passed());
  Hypothesis h = *hs[layer3];
  const size_t before = h.positives.size() + h.negatives.size();
  rel.collect_examples(two_params, h);
  EXPECT_EQ(h.positives.size() + h.negatives.size(), before);
}

TEST(ApiContain, MethodsOfPrivateBaseClassesAreParentsButPrivateFunctionsAreNot) {
  // _BatchNorm.forward is every BatchNorm layer's forward.
  EXPECT_FALSE(is_analysis_skipped_function("torch.nn.modules.batchnorm._BatchNorm.forward"));
  EXPECT_FALSE(is_analysis_skipped_function("torch.optim.lr_scheduler._LRScheduler.step"));
  EXPECT_FALSE(is_analysis_skipped_function("torch.nn.modules.linear.Linear.forward"));
  EXPECT_TRUE(is_analysis_skipped_function("torch.nn.modules.batchnorm._NormBase._check_input_dim"));
  EXPECT_TRUE(is_analysis_skipped_function("torch.optim.adam._single_tensor_adam"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._C._nn.linear"));
  // A C extension class's methods are its Python subclass's public ones (Tensor.normal_); its private
  // methods and the extension module's own functions are not.
  EXPECT_FALSE(is_analysis_skipped_function("torch._C.TensorBase.normal_"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._C.TensorBase._make_subclass"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._C.TensorBase"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._C._get_tracing_state"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._tensor.Tensor.backward"));
  EXPECT_TRUE(is_analysis_skipped_function("torch._dynamo.eval_frame.OptimizedModule.forward"));
  EXPECT_TRUE(is_analysis_skipped_function("torch.nn.modules.module.Module.__init__"));
  EXPECT_TRUE(is_analysis_skipped_function("torch.utils.data.dataloader.DataLoader.__iter__"));
}

TEST(ApiContain, ACallMadeUnderTorchCompileIsNeitherJudgedNorAnExample) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  spec.compiled_step_at = 4;  // Adam.step's callees ran as a compiled graph, unrecorded
  TraceStore compiled = synthetic("compiled", spec);
  Invariant inv = adam_step_contains_foreach_add();
  ApiContainRelation rel;
  CheckResult result = rel.check(compiled, inv, {});
  EXPECT_TRUE(result.triggered);
  EXPECT_TRUE(result.passed());

  std::vector<Hypothesis> generated = rel.generate(compiled);
  auto hs = by_description(generated);
  const std::string key = "torch.optim.adam.Adam.step contains torch._VariableFunctionsClass._foreach_add_({\"alpha\":{\"int\":1}})";
  ASSERT_TRUE(hs.count(key));
  EXPECT_EQ(hs[key]->positives.size(), 5u);  // the compiled step is no negative example
  EXPECT_EQ(hs[key]->negatives.size(), 0u);
  Hypothesis collected = *hs[key];
  collected.positives.clear();
  rel.collect_examples(compiled, collected);
  EXPECT_EQ(collected.positives.size(), 5u);
  EXPECT_EQ(collected.negatives.size(), 0u);
}
