// A real invariant of the original, used to detect DDP parameters going out of sync (docs/relations.md
// §ConsistencyRelation): replicas (different process, rank and object, same shape and step) hold the same
// Parameter.data. Shared by the relation's tests and the cross-rank exchange's.
#pragma once

namespace traincheck::test_data {

inline constexpr const char* kDdpConsistencyInvariant =
    R"({"text_description": "real", "relation": "ConsistencyRelation", "params": [)"
    R"({"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"},)"
    R"({"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}],)"
    R"("precondition": {"var": {"inverted": false, "preconditions": [{"clauses": [)"
    R"({"type": "unequal", "prop_name": "process_id", "additional_path": "None", "prop_dtype": "int"},)"
    R"({"type": "unequal", "prop_name": "attributes._ML_DAIKON_data_ID", "additional_path": "None", "prop_dtype": "int"},)"
    R"({"type": "unequal", "prop_name": "meta_vars._DATA_PARALLEL_RANK", "additional_path": "None", "prop_dtype": "float"},)"
    R"({"type": "consistent", "prop_name": "attributes.nbytes", "additional_path": "None", "prop_dtype": "int"},)"
    R"({"type": "consistent", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int"},)"
    R"({"type": "consistent", "prop_name": "attributes.ndim", "additional_path": "None", "prop_dtype": "int"}]}]}},)"
    R"("num_positive_examples": 448, "num_negative_examples": 2352})";

}  // namespace traincheck::test_data
