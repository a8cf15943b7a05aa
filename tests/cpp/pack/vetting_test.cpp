// Vetting candidates into a pack (pack/vetting.h) and reading check outputs back (pack/check_outcomes.h).
#include "pack/vetting.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pack/check_outcomes.h"

using namespace traincheck;

namespace {

Invariant lead(const std::string& a, const std::string& b) {
  return invariant_from_json(R"({"text_description": ")" + a + " leads " + b +
                             R"(", "relation": "FunctionLeadRelation", "params": [{"param_type": "APIParam", "api_full_name": ")" +
                             a + R"("}, {"param_type": "APIParam", "api_full_name": ")" + b +
                             R"("}], "precondition": {"func_lead": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})");
}

VetProgram program(std::string name, std::string family, const std::vector<Invariant>& all,
                   const std::vector<CheckOutcome>& outcomes, std::set<size_t> learned = {}) {
  VetProgram p{std::move(name), std::move(family), {}, {}, std::nullopt};
  for (size_t i = 0; i < all.size(); ++i) {
    p.outcomes[all[i].identity()] = outcomes[i];
    if (learned.count(i)) p.learned.insert(all[i].identity());
  }
  return p;
}

constexpr auto P = CheckOutcome::Passed;
constexpr auto V = CheckOutcome::Violated;
constexpr auto N = CheckOutcome::NotTriggered;

}  // namespace

TEST(Vetting, KeepsOnlyWhatPassedOnEnoughProgramsOfSeveralFamiliesAndWasViolatedNowhere) {
  const std::vector<Invariant> c = {lead("zero_grad", "step"),      // passes everywhere
                                    lead("is_exporting", "forward"),  // violated once
                                    lead("a", "b"),                   // passes on two programs only
                                    lead("c", "d")};                  // three programs, one family
  const std::vector<VetProgram> programs = {program("m1", "mlp", c, {P, P, P, P}), program("m2", "mlp", c, {P, V, P, P}),
                                            program("m3", "mlp", c, {P, P, N, P}), program("c1", "cnn", c, {P, P, N, N})};
  const VetResult r = vet(c, programs, VetRule{3, 2});
  ASSERT_EQ(r.decisions.size(), 4u);
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[0].passed_on.size(), 4u);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::Violated);
  EXPECT_EQ(r.decisions[1].violated_on, std::vector<std::string>{"m2"});
  EXPECT_EQ(r.decisions[2].verdict, VetVerdict::TooFewPrograms);
  EXPECT_EQ(r.decisions[3].verdict, VetVerdict::OneFamily);
  ASSERT_EQ(r.kept().size(), 1u);
  EXPECT_EQ(r.kept()[0]->text_description, "zero_grad leads step");
  const ClassTally& t = r.by_class.at("FunctionLeadRelation");
  EXPECT_EQ(t.candidates, 4u);
  EXPECT_EQ(t.kept, 1u);
  EXPECT_EQ(t.violated, 1u);
  EXPECT_EQ(t.too_few_programs, 1u);
  EXPECT_EQ(t.one_family, 1u);
}

TEST(Vetting, ThePackCarriesTheProgramsEachInvariantHeldOnThroughItsFile) {
  const std::vector<Invariant> c = {lead("zero_grad", "step"), lead("a", "b")};
  const std::vector<VetProgram> programs = {program("m1", "mlp", c, {P, P}), program("m2", "mlp", c, {P, N}),
                                            program("c1", "cnn", c, {P, P}), program("r1", "rnn", c, {N, P})};
  const std::vector<Invariant> pack = vet(c, programs, VetRule{3, 2}).pack();
  ASSERT_EQ(pack.size(), 2u);
  EXPECT_EQ(pack[0].held_on_programs, 3);
  EXPECT_EQ(pack[1].held_on_programs, 3);
  EXPECT_FALSE(c[0].held_on_programs.has_value());  // the candidates themselves are untouched
  // Written only when set, and read back: a file of the original's fields stays as it was.
  const std::string line = pack[0].to_json_line();
  EXPECT_NE(line.find("\"held_on_programs\": 3"), std::string::npos);
  EXPECT_EQ(invariant_from_json(line).held_on_programs, 3);
  EXPECT_EQ(c[0].to_json_line().find("held_on_programs"), std::string::npos);
}

TEST(Vetting, ACandidateWithoutACheckResultIsNotChecked) {
  const std::vector<Invariant> c = {lead("zero_grad", "step"), lead("x", "y")};
  VetProgram p = program("m1", "mlp", {c[0]}, {P});
  const VetResult r = vet(c, {p, program("c1", "cnn", c, {P, P})}, VetRule{1, 1});
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::NotChecked);
  EXPECT_EQ(r.by_class.at("FunctionLeadRelation").not_checked, 1u);
}

TEST(Vetting, LeaveOneOutNamesWhatTheProgramWouldViolateIfItHadNotBeenVetted) {
  // "b leads c" is violated only on the left-out program m2 and learned by m1: vetted without m2 it is
  // kept, so m2 would not check clean. "a leads b" was learned by m2 alone: without m2 it is no candidate.
  const std::vector<Invariant> c = {lead("zero_grad", "step"), lead("b", "c"), lead("a", "b")};
  const std::vector<VetProgram> programs = {
      program("m1", "mlp", c, {P, P, N}, {0, 1}), program("m2", "mlp", c, {P, V, V}, {2}),
      program("c1", "cnn", c, {P, P, P}, {0}), program("c2", "cnn", c, {P, P, P})};
  const VetResult r = vet(c, programs, VetRule{2, 2});
  EXPECT_EQ(r.kept().size(), 1u);
  ASSERT_EQ(r.leave_one_out.size(), 4u);
  EXPECT_EQ(r.leave_one_out[1].program, "m2");
  EXPECT_EQ(r.leave_one_out[1].violated, std::vector<const Invariant*>{&c[1]});
  EXPECT_TRUE(r.leave_one_out[0].violated.empty());
  EXPECT_EQ(r.by_class.at("FunctionLeadRelation").loo_programs_alarmed, 1u);
}

Invariant same_dtype(const std::string& api) {
  return invariant_from_json(R"({"text_description": ")" + api + R"( returns float32", "relation": "ConsistentOutputRelation", "params": [{"param_type": "APIParam", "api_full_name": ")" +
                             api + R"("}, {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float32"}], "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})");
}

TEST(Vetting, ARelationWhoseInvariantsAlarmOnTooManyLeftOutProgramsShipsNothing) {
  // Rule (e). Each ordering is learned by one program, holds on three, and is violated by the fourth, a
  // different one each time: each is dropped by (a), but left out, every program violates one, so the
  // orderings do not generalise as a class and "zero_grad leads step", which never failed, goes too. The
  // output relation alarms on no left-out program and stays.
  const std::vector<Invariant> c = {lead("zero_grad", "step"), lead("a", "b"), lead("c", "d"), lead("e", "f"),
                                    lead("g", "h"), same_dtype("relu")};
  const std::vector<VetProgram> programs = {
      program("m1", "mlp", c, {P, V, P, P, P, P}, {0, 2, 5}), program("m2", "mlp", c, {P, P, V, P, P, P}, {3}),
      program("c1", "cnn", c, {P, P, P, V, P, P}, {4}), program("c2", "cnn", c, {P, P, P, P, V, P}, {1})};
  VetRule rule{2, 2};
  const VetResult all = vet(c, programs, rule);  // (e) off
  EXPECT_EQ(all.kept().size(), 2u);
  EXPECT_EQ(all.by_class.at("FunctionLeadRelation").loo_programs_alarmed, 4u);
  EXPECT_EQ(all.by_class.at("ConsistentOutputRelation").loo_programs_alarmed, 0u);
  EXPECT_EQ(all.shipped_leave_one_out(0).size(), 1u);

  rule.max_relation_loo_share = 0.25;
  const VetResult r = vet(c, programs, rule);
  EXPECT_FALSE(r.by_class.at("FunctionLeadRelation").generalises);
  EXPECT_TRUE(r.by_class.at("ConsistentOutputRelation").generalises);
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::ClassDoesNotGeneralise);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::Violated);  // (a) still names the program that broke it
  EXPECT_EQ(r.by_class.at("FunctionLeadRelation").class_excluded, 1u);
  ASSERT_EQ(r.kept().size(), 1u);
  EXPECT_EQ(r.kept()[0], &c[5]);
  for (size_t i = 0; i < programs.size(); ++i) EXPECT_TRUE(r.shipped_leave_one_out(i).empty()) << programs[i].name;
}

Invariant contains(const std::string& parent, const std::string& child, const std::string& arguments = "") {
  const std::string args = arguments.empty() ? "" : R"(, "arguments": {"args": )" + arguments + R"(, "func_name": ")" + child + R"("})";
  return invariant_from_json(R"({"text_description": ")" + parent + " contains " + child +
                             R"(", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": ")" +
                             parent + R"("}, {"param_type": "APIParam", "api_full_name": ")" + child + "\"" + args +
                             R"(}], "precondition": {"parent_func_call_pre": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})");
}

TEST(Vetting, HypothesesThatFixArgumentValuesAreJudgedAsAClassApartFromTheirRelation) {
  // Rule (e) per class: each containment with an argument value is learned by one program and broken by
  // another (a setting that program chose otherwise), so left out, every program alarms and that class
  // goes; the argument-free containments of the same relation alarm on no left-out program and stay.
  const std::vector<Invariant> c = {contains("step", "is_complex"), contains("forward", "linear"),
                                    contains("init", "gain", R"({"nonlinearity": {"str": "leaky_relu"}})"),
                                    contains("embed", "embedding", R"({"max_norm": {"NoneType": null}})")};
  EXPECT_EQ(hypothesis_class(c[0]), "APIContainRelation");
  EXPECT_EQ(hypothesis_class(c[2]), "APIContainRelation with argument values");
  const std::vector<VetProgram> programs = {
      program("m1", "mlp", c, {P, P, V, P}, {0, 1, 3}), program("m2", "mlp", c, {P, P, P, V}, {2}),
      program("c1", "cnn", c, {P, P, P, P}, {0}), program("c2", "cnn", c, {P, P, P, P})};
  VetRule rule{2, 2};
  rule.max_relation_loo_share = 0.25;
  const VetResult r = vet(c, programs, rule);
  EXPECT_TRUE(r.by_class.at("APIContainRelation").generalises);
  EXPECT_EQ(r.by_class.at("APIContainRelation").loo_programs_alarmed, 0u);
  EXPECT_FALSE(r.by_class.at("APIContainRelation with argument values").generalises);
  EXPECT_EQ(r.by_class.at("APIContainRelation with argument values").loo_programs_alarmed, 2u);
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[2].verdict, VetVerdict::Violated);
  EXPECT_EQ(r.decisions[3].verdict, VetVerdict::Violated);
  EXPECT_EQ(r.kept().size(), 2u);
}

Invariant cover(const std::string& a, const std::string& b) {
  Invariant inv = lead(a, b);
  inv.relation = "FunctionCoverRelation";
  return inv;
}

TEST(Vetting, RuleGNamesTheCallsWhoseRepeatsTheEvidenceNeeds) {
  EXPECT_EQ(repeated_evidence_apis(lead("seed", "init")), std::vector<std::string>{"seed"});  // "before seed's next call"
  EXPECT_EQ(repeated_evidence_apis(cover("zero_grad", "step")), std::vector<std::string>{"step"});  // "before every step"
  EXPECT_EQ(repeated_evidence_apis(contains("manual_seed", "seed_impl", R"({"seed": {"int": 1}})")),
            std::vector<std::string>{"seed_impl"});
  EXPECT_TRUE(repeated_evidence_apis(contains("step", "is_complex")).empty());
  EXPECT_TRUE(repeated_evidence_apis(same_dtype("relu")).empty());
}

TEST(Vetting, RuleGDropsWhatOnlyACallMadeOncePerRunShowed) {
  // Learning across programs: "seed leads init" and the seed's value were seen where `seed` and
  // `seed_impl` ran once per run, a script's set-up; "zero_grad leads step" repeats in one program it
  // passed on (m2), and a containment without argument values needs no repeat.
  const std::vector<Invariant> c = {lead("seed", "init"), lead("zero_grad", "step"), cover("zero_grad", "step"),
                                    contains("manual_seed", "seed_impl", R"({"seed": {"int": 1}})"),
                                    contains("step", "is_complex")};
  std::vector<VetProgram> programs = {program("m1", "mlp", c, {P, P, P, P, P}), program("m2", "cnn", c, {P, P, P, P, P})};
  programs[0].repeated_calls = std::set<std::string>{"step"};
  programs[1].repeated_calls = std::set<std::string>{"zero_grad", "step", "is_complex"};
  VetResult r = vet(c, programs, VetRule{2, 1});
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::SeenOncePerRun);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[2].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.decisions[3].verdict, VetVerdict::SeenOncePerRun);
  EXPECT_EQ(r.decisions[4].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.by_class.at("FunctionLeadRelation").seen_once_per_run, 1u);
  // A repeat only counts in a program the invariant passed on: m2 no longer triggers "zero_grad leads step".
  programs[1].outcomes[c[1].identity()] = N;
  r = vet(c, programs, VetRule{1, 1});
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::SeenOncePerRun);
  // Without the traces (traincheck-vet reads check folders only), rule (g) does not apply.
  for (VetProgram& p : programs) p.repeated_calls.reset();
  r = vet(c, programs, VetRule{1, 1});
  for (const VetDecision& d : r.decisions) EXPECT_EQ(d.verdict, VetVerdict::Kept) << d.invariant->text_description.str();
}

TEST(Vetting, AnInvariantThatFixesTheDeviceIsNeverKept) {
  const Invariant on_cpu = invariant_from_json(
      R"j({"text_description": "relu returns tensors whose is_cuda is false", "relation": "ConsistentOutputRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.relu"}, {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "is_cuda", "const_value": false}], "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})j");
  const Invariant device_arg = invariant_from_json(
      R"j({"text_description": "step contains tensor(device=cpu)", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "Adam.step"}, {"param_type": "APIParam", "api_full_name": "torch.tensor", "arguments": {"args": {"device": {"str": "cpu"}}, "func_name": "torch.tensor"}}], "precondition": {"parent_func_call_pre": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})j");
  const Invariant same_device = invariant_from_json(
      R"j({"text_description": "relu: input 0.is_cuda equals output 0.is_cuda", "relation": "ConsistentInputOutputRelation", "params": [{"param_type": "InputOutputParam", "name": "input_tensors", "index": 0, "type": "torch.Tensor", "additional_path": ["is_cuda"], "api_name": "torch.relu", "is_input": true}, {"param_type": "APIParam", "api_full_name": "torch.relu"}, {"param_type": "InputOutputParam", "name": "output_tensors", "index": 0, "type": "torch.Tensor", "additional_path": ["is_cuda"], "api_name": "torch.relu", "is_input": false}], "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 3, "num_negative_examples": 0})j");
  EXPECT_TRUE(is_device_bound(on_cpu));
  EXPECT_TRUE(is_device_bound(device_arg));
  EXPECT_FALSE(is_device_bound(same_device));  // relates input to output: holds on any device
  // Without a device, manual_seed_all queues the seed for the device's initialisation; with one, it seeds.
  EXPECT_TRUE(is_device_bound(contains("torch.cuda.random.manual_seed_all", "torch._utils._LazySeedTracker.queue_seed_all")));
  EXPECT_TRUE(is_device_bound(contains("torch.random.manual_seed", "torch.xpu.is_initialized")));
  EXPECT_FALSE(is_device_bound(contains("torch.optim.adam.Adam.step", "torch._VariableFunctionsClass.is_complex")));
  EXPECT_FALSE(is_device_bound(contains("torch.cudax.step", "torch.is_grad_enabled")));  // a module that only begins alike
  const std::vector<Invariant> c = {on_cpu, device_arg, same_device};
  const VetResult r = vet(c, {program("m1", "mlp", c, {P, P, P}), program("c1", "cnn", c, {P, P, P})}, VetRule{2, 2});
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::DeviceBound);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::DeviceBound);
  EXPECT_EQ(r.decisions[2].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.by_class.at("ConsistentOutputRelation").device_bound, 1u);
}

TEST(Vetting, AnInvariantWhosePreconditionFixesTheStepNumberIsNeverKept) {
  // Rule (f): "in step 1, Adam.step creates its state (zeros_like)" is true of a loop that steps once in
  // step 1, and false of one that steps twice, or resumes: the step number stands in for the first call.
  const Invariant first_step = invariant_from_json(
      R"j({"text_description": "Adam.step contains zeros_like", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "Adam.step"}, {"param_type": "APIParam", "api_full_name": "torch.zeros_like"}], "precondition": {"parent_func_call_pre": {"inverted": false, "preconditions": [{"clauses": [{"type": "constant", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int", "values": [1]}, {"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str", "values": ["training"]}]}]}}, "num_positive_examples": 2, "num_negative_examples": 58})j");
  const Invariant in_training = invariant_from_json(
      R"j({"text_description": "Adam.step contains _get_lr", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "Adam.step"}, {"param_type": "APIParam", "api_full_name": "torch.optim._get_lr"}], "precondition": {"parent_func_call_pre": {"inverted": false, "preconditions": [{"clauses": [{"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str", "values": ["training"]}]}]}}, "num_positive_examples": 3, "num_negative_examples": 0})j");
  const Invariant replicas = invariant_from_json(
      R"j({"text_description": "torch.nn.Parameter.data is consistent across variable instances", "relation": "ConsistencyRelation", "params": [{"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}, {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}], "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": [{"type": "consistent", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int"}, {"type": "unequal", "prop_name": "process_id", "additional_path": "None", "prop_dtype": "int"}]}]}}, "num_positive_examples": 68, "num_negative_examples": 408})j");
  EXPECT_TRUE(is_step_bound(first_step));
  EXPECT_FALSE(is_step_bound(in_training));
  EXPECT_FALSE(is_step_bound(replicas));  // pairs records of one step: fixes no step
  const std::vector<Invariant> c = {first_step, in_training};
  const VetResult r = vet(c, {program("m1", "mlp", c, {P, P}), program("c1", "cnn", c, {P, P})}, VetRule{2, 2});
  EXPECT_EQ(r.decisions[0].verdict, VetVerdict::StepBound);
  EXPECT_EQ(r.decisions[1].verdict, VetVerdict::Kept);
  EXPECT_EQ(r.by_class.at("APIContainRelation").step_bound, 1u);
}

TEST(CheckOutcomes, ReadsTheThreeLogsOfACheckFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "tc_vetting_test_outcomes";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Invariant a = lead("zero_grad", "step"), b = lead("x", "y"), d = lead("p", "q");
  auto indented = [](const Invariant& inv, const char* extra) {
    return std::string("{\n    \"invariant\": ") + inv.to_json_line() + ",\n    " + extra + "\n}\n";
  };
  std::ofstream(dir / "passed.log") << indented(a, "\"check_passed\": true");
  std::ofstream(dir / "failed.log") << indented(b, "\"check_passed\": false,\n    \"trace\": [\n        {}\n    ]");
  std::ofstream(dir / "not_triggered.log") << indented(d, "\"triggered\": false");
  const OutcomesByIdentity out = read_check_outcomes(dir.string());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.at(a.identity()), CheckOutcome::Passed);
  EXPECT_EQ(out.at(b.identity()), CheckOutcome::Violated);
  EXPECT_EQ(out.at(d.identity()), CheckOutcome::NotTriggered);
  std::ofstream(dir / "not_triggered.log") << indented(a, "\"triggered\": false");
  EXPECT_THROW(read_check_outcomes(dir.string()), CheckOutcomeError);
  EXPECT_THROW(read_check_outcomes((dir / "absent").string()), CheckOutcomeError);
  std::filesystem::remove_all(dir);
}

TEST(Vetting, AnExtensionDropsWhatAnAddedProgramViolatesAndCountsThePassesOfTheRest) {
  std::vector<Invariant> pack = {lead("zero_grad", "step"), lead("relu_forward", "relu"), lead("backward", "step")};
  pack[0].held_on_programs = 12;
  pack[1].held_on_programs = 22;
  pack[2].held_on_programs = 15;
  const std::vector<VetProgram> added = {program("inplace_relu", "cnn", pack, {P, V, N}),
                                         program("hand_update", "mlp", pack, {P, N, P})};
  const PackExtension extension = extend_pack(pack, added);
  ASSERT_EQ(extension.pack.size(), 2u);
  EXPECT_EQ(extension.pack[0].identity(), pack[0].identity());
  EXPECT_EQ(extension.pack[0].held_on_programs, 14);
  EXPECT_EQ(extension.pack[1].identity(), pack[2].identity());
  EXPECT_EQ(extension.pack[1].held_on_programs, 16);
  ASSERT_EQ(extension.dropped.size(), 1u);
  EXPECT_EQ(extension.dropped[0].first.identity(), pack[1].identity());
  EXPECT_EQ(extension.dropped[0].second, std::vector<std::string>{"inplace_relu"});

  VetProgram unchecked = program("other_pack", "mlp", {pack[0]}, {P});
  EXPECT_THROW(extend_pack(pack, {unchecked}), std::runtime_error);
}
