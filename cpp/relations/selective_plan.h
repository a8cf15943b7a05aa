// The selective instrumentation plan (docs/collection.md §Selective instrumentation): the APIs a collector wraps for the invariants of
// some files, and what each records, written as the original's instr_opts.json.
//
// What an invariant needs recorded comes from three places, each owning its part: its relation
// (Relation::record_needs: arguments, return values, variables changed inside a call), its params
// (the arguments an APIParam constrains) and its precondition (the context managers its clauses name,
// whose __init__/__enter__/__exit__ calls are recorded with every __init__ argument). The Python
// collector only installs the result (python/traincheck/instrument/selective.py).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace traincheck {

struct ApiRecordOptions {
  bool dump_args = false;
  bool dump_ret = false;
  // The arguments to record, when every reason to record arguments names them; empty: all of them.
  std::vector<std::string> arg_names;  // first-named first
  std::vector<std::string> var_types;  // variable types whose changes inside its calls are recorded
};

struct PlannedInvariant {
  std::string relation;
  std::vector<std::string> apis;  // the APIs it is about (not the context managers it needs)
  // The variable types whose states it reads (its var params'): the collector tracks such variables
  // (for torch.nn.Parameter, the parameters each optimizer steps) without being told which to track.
  std::vector<std::string> var_types = {};
};

struct SelectivePlan {
  std::map<std::string, ApiRecordOptions> funcs;  // by API name
  std::vector<PlannedInvariant> invariants;        // in file order
};

// Reads the invariant files (relations from the registry) and plans for all of them. Throws
// InvariantFormatError naming the file, line and field of a malformed invariant.
SelectivePlan build_selective_plan(const std::vector<std::string>& invariant_files);

// instr_opts.json as compact JSON, keys in the order the original writes them, "model_tracker_style"
// null (the collector sets it) and ours "traincheck_invariants" (what each invariant names, for the
// traced process' coverage report and its model tracking, "var_types" only when it reads some; the
// original ignores unknown keys).
std::string instr_opts_json(const SelectivePlan& plan);

}  // namespace traincheck
