#include "relations/selective_plan.h"

#include <algorithm>
#include <set>

#include "invariant/invariant.h"
#include "relations/registry.h"
#include "common/json_writer.h"

namespace traincheck {

namespace {

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// The original's dump_args_config: each argument an APIParam constrains (and nothing else), by name.
void add_constrained_arguments(const Value& arguments, ApiRecordOptions& opts) {
  const Value* args = arguments.find("args");
  if (args == nullptr) return;
  if (args->is_object()) {
    for (const Member& m : args->as_object()) add_unique(opts.arg_names, std::string(key_name(m.key)));
  } else if (args->is_array()) {
    for (const Value& name : args->as_array())
      if (name.is_string()) add_unique(opts.arg_names, name.as_string());
  }
}

void plan_invariant(const Invariant& inv, const std::string& file, size_t line, SelectivePlan& plan,
                    std::set<std::string>& all_args) {
  if (inv.params.empty()) throw InvariantFormatError(file, line, "params", "expected a non-empty list");
  const Relation* relation = find_relation(inv.relation);  // the codec checked the name
  const RecordNeeds needs = relation->record_needs(inv);
  PlannedInvariant planned{inv.relation, named_apis(inv), {}};
  for (const Param& p : inv.params)
    if ((p.type == ParamType::VarType || p.type == ParamType::VarName) && !p.var_type.empty())
      add_unique(planned.var_types, std::string(p.var_type));
  for (const std::string& api : planned.apis) {
    ApiRecordOptions& opts = plan.funcs[api];
    opts.dump_args |= needs.arguments;
    opts.dump_ret |= needs.return_values;
    if (needs.arguments) all_args.insert(api);
  }
  for (const Param& p : inv.params) {
    if (p.type != ParamType::Api || !p.arguments || !p.arguments->is_object() || p.arguments->as_object().empty()) continue;
    ApiRecordOptions& opts = plan.funcs[p.api_full_name];
    opts.dump_args = true;
    add_constrained_arguments(*p.arguments, opts);
  }
  if (!planned.apis.empty())
    for (const std::string& var_type : needs.var_types_in_first_api) add_unique(plan.funcs[planned.apis[0]].var_types, var_type);
  for (const auto& [api, var_type] : needs.var_types_in_apis) add_unique(plan.funcs[api].var_types, var_type);
  for (const std::string& manager : context_managers_named(inv)) {
    // Their spans and __init__ arguments are what such clauses read, offline and online.
    for (const char* method : {".__init__", ".__enter__", ".__exit__"}) plan.funcs[manager + method];
    plan.funcs[manager + ".__init__"].dump_args = true;
    all_args.insert(manager + ".__init__");
  }
  plan.invariants.push_back(std::move(planned));
}

// {"k1": value, "k2": value, ...}: one member per key, all with the same JSON value.
void append_object_of(std::string& out, const std::vector<std::string>& keys, std::string_view value) {
  out += '{';
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, keys[i]);
    out += ':';
    out += value;
  }
  out += '}';
}

void append_string_list(std::string& out, const std::vector<std::string>& items) {
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, items[i]);
  }
  out += ']';
}

}  // namespace

SelectivePlan build_selective_plan(const std::vector<std::string>& invariant_files) {
  SelectivePlan plan;
  std::set<std::string> all_args;  // APIs some reason needs every argument of
  for (const std::string& file : invariant_files)
    for_each_invariant_in_file(file, relation_names(),
                               [&](Invariant&& inv, size_t line) { plan_invariant(inv, file, line, plan, all_args); });
  for (const std::string& api : all_args) plan.funcs[api].arg_names.clear();
  return plan;
}

std::string instr_opts_json(const SelectivePlan& plan) {
  std::string out = "{\"funcs_instr_opts\":{";
  bool first = true;
  for (const auto& [api, opts] : plan.funcs) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, api);
    out += ":{\"scan_proxy_in_args\":false,\"dump_args\":";
    append_json_bool(out, opts.dump_args);
    out += ",\"dump_ret\":";
    append_json_bool(out, opts.dump_ret);
    out += ",\"var_types_to_track\":";
    append_object_of(out, opts.var_types, "{\"dump_unchanged\":false}");
    if (!opts.arg_names.empty()) {
      out += ",\"dump_args_config\":";
      append_object_of(out, opts.arg_names, "null");
    }
    out += '}';
  }
  out += "},\"model_tracker_style\":null,\"disable_proxy_dumping\":true,\"traincheck_invariants\":[";
  for (size_t i = 0; i < plan.invariants.size(); ++i) {
    if (i) out += ',';
    out += "{\"relation\":";
    append_json_string(out, plan.invariants[i].relation);
    out += ",\"apis\":";
    append_string_list(out, plan.invariants[i].apis);
    if (!plan.invariants[i].var_types.empty()) {
      out += ",\"var_types\":";
      append_string_list(out, plan.invariants[i].var_types);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace traincheck
