// Which invariants a run checks by its library versions (invariant/version_gate.h), and the codec's
// vetted_on field.
#include "invariant/version_gate.h"

#include <gtest/gtest.h>

#include <fstream>

#include "scratch_dir.h"

using namespace traincheck;

namespace {

Invariant contains(const std::string& vetted_on_json) {
  return invariant_from_json(
      R"({"text_description": "Adam.step contains _to_scalar", "relation": "APIContainRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"}, {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer._to_scalar"}], "precondition": null, "num_positive_examples": 3, "num_negative_examples": 0)" +
      (vetted_on_json.empty() ? std::string() : ", \"vetted_on\": " + vetted_on_json) + "}");
}

}  // namespace

TEST(VersionGate, AVersionsSeriesIsItsMajorAndMinor) {
  EXPECT_EQ(version_series("2.13.0+cpu"), "2.13");
  EXPECT_EQ(version_series("2.5.1"), "2.5");
  EXPECT_EQ(version_series("2.13.0a0+git1234"), "2.13");
  EXPECT_EQ(version_series("2.13"), "2.13");
  EXPECT_EQ(version_series("7"), "7");
  EXPECT_EQ(library_key("Typing_Extensions"), "typing-extensions");
}

TEST(VersionGate, VettedOnRoundTripsThroughTheCodecAndIsAbsentWhenEmpty) {
  const Invariant stamped = contains(R"({"torch": ["2.12", "2.13"]})");
  ASSERT_EQ(stamped.vetted_on.size(), 1u);
  EXPECT_EQ(stamped.vetted_on.at("torch"), (std::vector<std::string>{"2.12", "2.13"}));
  EXPECT_EQ(invariant_from_json(stamped.to_json_line()).vetted_on, stamped.vetted_on);
  EXPECT_EQ(contains("").to_json_line().find("vetted_on"), std::string::npos);
  EXPECT_THROW(contains(R"({"torch": "2.13"})"), InvariantFormatError);
  EXPECT_THROW(contains(R"(["torch"])"), InvariantFormatError);
}

TEST(VersionGate, AnInvariantVettedOnAnotherSeriesIsSkippedAndTheNoteSaysWhy) {
  const std::vector<Invariant> invariants = {contains(R"({"torch": ["2.13"]})"), contains(""),
                                             contains(R"({"torch": ["2.12", "2.13"]})")};
  const VersionGate on_old = gate_by_version(invariants, {{"torch", "2.5.1"}});
  EXPECT_EQ(on_old.skipped, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(on_old.count, 2u);
  EXPECT_EQ(on_old.note, "2 invariants vetted on torch 2.12 or 2.13, torch 2.13 not checked on torch 2.5.1");

  const VersionGate on_same = gate_by_version(invariants, {{"torch", "2.13.0+cpu"}});
  EXPECT_EQ(on_same.count, 0u);
  EXPECT_EQ(on_same.note, "");
  // A run whose version of the library is unknown checks everything (a trace without env_dump.txt).
  EXPECT_EQ(gate_by_version(invariants, {}).count, 0u);
  EXPECT_EQ(gate_by_version(invariants, {{"transformers", "4.0"}}).count, 0u);
}

TEST(VersionGate, VersionsComeFromTheEnvDumpsLibrarySectionOrFromJson) {
  const auto folder = scratch::empty_dir("version_gate_env");
  std::ofstream(folder / "env_dump.txt") << "Arguments:\npyscript: a.py\n\nLibrary Versions:\nPyYAML 6.0\ntorch 2.5.1\n"
                                            "typing_extensions 4.1\n\nPython Version:\n3.11\n";
  const LibraryVersions versions = read_env_dump_versions((folder / "env_dump.txt").string());
  EXPECT_EQ(versions, (LibraryVersions{{"pyyaml", "6.0"}, {"torch", "2.5.1"}, {"typing-extensions", "4.1"}}));
  EXPECT_TRUE(read_env_dump_versions((folder / "absent.txt").string()).empty());
  EXPECT_EQ(library_versions_from_json(R"({"torch": "2.13.0", "Lightning": "2.6"})"),
            (LibraryVersions{{"lightning", "2.6"}, {"torch", "2.13.0"}}));
  EXPECT_THROW(library_versions_from_json(R"({"torch": 2})"), std::invalid_argument);
  EXPECT_THROW(library_versions_from_json("[]"), std::invalid_argument);
}
