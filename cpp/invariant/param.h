// Invariant params (docs/formats.md §Params): what an invariant is about.
//
// Absent-versus-null matters: an optional field that is absent means "not set / unconstrained"; a field
// set to null means "the value None". std::optional<Value> keeps that distinction (nullopt vs null).
//
// Names (APIs, variable types and names, attributes) are interned (trace/name.h): inference makes a
// param per function of each pair it hypothesises, and copying a long name into each made its memory
// grow as name length x pairs; copying a Param copies 4 bytes per name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/field_error.h"
#include "trace/name.h"
#include "trace/value.h"

namespace traincheck {

enum class ParamType { Api, VarType, VarName, InputOutput };

std::string_view param_type_name(ParamType t);  // "APIParam", "VarTypeParam", ...

struct Param {
  ParamType type = ParamType::Api;

  // APIParam
  Name api_full_name;
  std::optional<Value> exception;  // opaque; kept for round trips
  std::optional<Value> arguments;  // {"args": {name: {type: value}}, "func_name": str} or null

  // VarTypeParam / VarNameParam
  Name var_type;
  Name var_name;  // VarNameParam only
  Name attr_name;
  std::optional<Value> pre_value, post_value, const_value;

  // InputOutputParam
  Name name;
  Value index;            // int or null
  Name io_type;           // "type"
  Value additional_path;  // list or null
  Name api_name;
  bool is_input = false;

  static Param api(std::string_view name);
  static Param var_type_param(std::string_view var_type, std::string_view attr);

  Value to_value() const;
  std::string to_json() const;  // canonical (compact) form; identity of a param
  // Equal iff to_json() is, within this process, with each name written as its interned id: a key
  // whose length does not grow with the names' (inference keys hypotheses by it).
  std::string compact_key() const;
};

class ParamFormatError : public FieldError {
 public:
  using FieldError::FieldError;
};
// Throws ParamFormatError naming the offending field.
Param param_from_value(const Value& v);

// Generalised values used by APIContain's var-change children (docs/formats.md §Params).
bool is_generalized_token(const Value& v);
// Whether an observed value satisfies an expected one: equality for concrete values, the predicate
// for a generalised token ("non_zero" holds for any non-zero number, "anything" for everything).
bool value_matches(const Value& expected, const Value& actual);
// The generalisation of several observed values (all assumed to differ somewhere).
Value generalize_values(const std::vector<Value>& values);

// "torch.optim.optimizer.Optimizer.zero_grad" -> "Optimizer.zero_grad"; "torch.nn.Parameter" ->
// "Parameter"; "_TRAINCHECK_" prefixes hidden. Used for display names.
std::string short_api_name(std::string_view full);
std::string short_type_name(std::string_view full);
std::string display_value(const Value& v);  // "non_zero" -> "non-zero", null -> "None"

}  // namespace traincheck
