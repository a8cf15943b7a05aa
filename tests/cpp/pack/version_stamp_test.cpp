// A pack records the library versions its implementation invariants were vetted on (pack/version_stamp.h).
#include "pack/version_stamp.h"

#include <gtest/gtest.h>

using namespace traincheck;

namespace {

Invariant from(const std::string& relation, const std::string& params) {
  return invariant_from_json(R"({"text_description": "x", "relation": ")" + relation + R"(", "params": )" + params +
                             R"(, "precondition": null, "num_positive_examples": 3, "num_negative_examples": 0})");
}

}  // namespace

TEST(VersionStamp, OnlyInvariantsAboutALibrarysImplementationAreStampedWithItsSeries) {
  std::vector<Invariant> pack = {
      from("APIContainRelation",
           R"([{"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"}, {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer._to_scalar"}])"),
      from("ModuleModeRelation", R"([{"param_type": "APIParam", "api_full_name": "torch.nn.modules.dropout.Dropout.forward"}])"),
      from("GradientResetRelation",
           R"([{"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_grad_reset"}])"),
      from("APIContainRelation",
           R"([{"param_type": "APIParam", "api_full_name": "transformers.trainer.Trainer.training_step"}, {"param_type": "APIParam", "api_full_name": "torch.autograd.backward"}])"),
  };
  EXPECT_EQ(stamp_vetted_versions(pack, {{"torch", "2.13.0+cpu"}}), 2u);
  EXPECT_EQ(pack[0].vetted_on, (std::map<std::string, std::vector<std::string>>{{"torch", {"2.13"}}}));
  EXPECT_TRUE(pack[1].vetted_on.empty());  // training semantics: every version
  EXPECT_TRUE(pack[2].vetted_on.empty());
  // Only the libraries whose corpus version is known: transformers' is not given here.
  EXPECT_EQ(pack[3].vetted_on, (std::map<std::string, std::vector<std::string>>{{"torch", {"2.13"}}}));
}

TEST(VersionStamp, TheFlagIsAListOfLibraryEqualsVersion) {
  EXPECT_EQ(parse_library_versions_flag("torch=2.13.0,Transformers=5.25.0"),
            (LibraryVersions{{"torch", "2.13.0"}, {"transformers", "5.25.0"}}));
  EXPECT_THROW(parse_library_versions_flag("torch"), std::invalid_argument);
  EXPECT_THROW(parse_library_versions_flag("torch=2.13,"), std::invalid_argument);
  EXPECT_THROW(parse_library_versions_flag("=2.13"), std::invalid_argument);
}
