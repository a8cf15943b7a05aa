#include "invariant/param.h"

#include <algorithm>
#include <cmath>

namespace traincheck {

std::string_view param_type_name(ParamType t) {
  switch (t) {
    case ParamType::Api: return "APIParam";
    case ParamType::VarType: return "VarTypeParam";
    case ParamType::VarName: return "VarNameParam";
    case ParamType::InputOutput: return "InputOutputParam";
  }
  return "";
}

Param Param::api(std::string_view name) {
  Param p;
  p.type = ParamType::Api;
  p.api_full_name = Name(name);
  return p;
}

Param Param::var_type_param(std::string_view var_type, std::string_view attr) {
  Param p;
  p.type = ParamType::VarType;
  p.var_type = Name(var_type);
  p.attr_name = Name(attr);
  return p;
}

namespace {

// The param as an object; `name_value` turns each name into its value (its text, or its id).
template <typename NameValue>
Value param_value(const Param& param, NameValue&& name_value) {
  const Param& p = param;
  const ParamType type = p.type;
  Object o;
  auto put = [&](std::string_view k, Value v) { o.push_back({intern_key(k), std::move(v)}); };
  put("param_type", Value::string(std::string(param_type_name(type))));
  switch (type) {
    case ParamType::Api:
      put("api_full_name", name_value(p.api_full_name));
      if (p.exception) put("exception", *p.exception);
      if (p.arguments) put("arguments", *p.arguments);
      break;
    case ParamType::VarType:
    case ParamType::VarName:
      put("var_type", name_value(p.var_type));
      if (type == ParamType::VarName) put("var_name", name_value(p.var_name));
      put("attr_name", name_value(p.attr_name));
      if (p.pre_value) put("pre_value", *p.pre_value);
      if (p.post_value) put("post_value", *p.post_value);
      if (p.const_value) put("const_value", *p.const_value);
      break;
    case ParamType::InputOutput:
      put("name", name_value(p.name));
      put("index", p.index);
      put("type", name_value(p.io_type));
      put("additional_path", p.additional_path);
      put("api_name", name_value(p.api_name));
      put("is_input", Value::boolean(p.is_input));
      break;
  }
  return Value::object(std::move(o));
}

}  // namespace

Value Param::to_value() const {
  return param_value(*this, [](Name n) { return Value::string(n.str()); });
}

std::string Param::to_json() const { return traincheck::to_json(to_value()); }

std::string Param::compact_key() const {
  // An integer where to_json has a string: no name's text can be mistaken for an id.
  return traincheck::to_json(param_value(*this, [](Name n) { return Value::integer(n.id()); }));
}

namespace {

std::string required_string(const Value& v, std::string_view key) {
  const Value* f = v.find(key);
  if (f == nullptr || !f->is_string()) throw ParamFormatError(std::string(key), "missing or not a string");
  return f->as_string();
}

std::optional<Value> optional_value(const Value& v, std::string_view key) {
  const Value* f = v.find(key);
  if (f == nullptr) return std::nullopt;
  return *f;
}

}  // namespace

Param param_from_value(const Value& v) {
  if (!v.is_object()) throw ParamFormatError("", "a param must be an object");
  const std::string kind = required_string(v, "param_type");
  Param p;
  if (kind == "APIParam") {
    p.type = ParamType::Api;
    p.api_full_name = Name(required_string(v, "api_full_name"));
    p.exception = optional_value(v, "exception");
    p.arguments = optional_value(v, "arguments");
    if (p.arguments && !p.arguments->is_null() && !p.arguments->is_object())
      throw ParamFormatError("arguments", "must be an object or null");
  } else if (kind == "VarTypeParam" || kind == "VarNameParam") {
    p.type = kind == "VarTypeParam" ? ParamType::VarType : ParamType::VarName;
    p.var_type = Name(required_string(v, "var_type"));
    if (p.type == ParamType::VarName) p.var_name = Name(required_string(v, "var_name"));
    p.attr_name = Name(required_string(v, "attr_name"));
    p.pre_value = optional_value(v, "pre_value");
    p.post_value = optional_value(v, "post_value");
    p.const_value = optional_value(v, "const_value");
  } else if (kind == "InputOutputParam") {
    p.type = ParamType::InputOutput;
    p.name = Name(required_string(v, "name"));
    if (const Value* f = v.find("index")) p.index = *f;
    if (const Value* f = v.find("type"); f && f->is_string()) p.io_type = Name(f->as_string());
    if (const Value* f = v.find("additional_path")) p.additional_path = *f;
    if (const Value* f = v.find("api_name"); f && f->is_string()) p.api_name = Name(f->as_string());
    if (const Value* f = v.find("is_input"); f && f->is_bool()) p.is_input = f->as_bool();
  } else {
    throw ParamFormatError("param_type", "unknown param type '" + kind + "'");
  }
  return p;
}

static constexpr std::string_view kTokens[] = {"above_zero", "below_zero", "non_positive", "non_negative",
                                               "non_zero",   "non_none",   "anything"};

bool is_generalized_token(const Value& v) {
  if (!v.is_string()) return false;
  return std::find(std::begin(kTokens), std::end(kTokens), v.as_string()) != std::end(kTokens);
}

static bool is_numeric(const Value& v) { return v.is_number() && !v.is_nan(); }

bool value_matches(const Value& expected, const Value& actual) {
  if (!is_generalized_token(expected)) return expected == actual;
  const std::string& t = expected.as_string();
  if (t == "anything") return true;
  if (t == "non_none") return !actual.is_null();
  if (!is_numeric(actual)) return false;
  const double x = actual.as_double();
  if (t == "above_zero") return x > 0;
  if (t == "below_zero") return x < 0;
  if (t == "non_positive") return x <= 0;
  if (t == "non_negative") return x >= 0;
  return x != 0;  // non_zero
}

Value generalize_values(const std::vector<Value>& values) {
  bool all_numeric = !values.empty();
  bool has_none = false;
  for (const Value& v : values) {
    if (!is_numeric(v)) all_numeric = false;
    if (v.is_null()) has_none = true;
  }
  if (!all_numeric) return Value::string(has_none ? "anything" : "non_none");
  double lo = values.front().as_double(), hi = lo;
  bool has_zero = false;
  for (const Value& v : values) {
    const double x = v.as_double();
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    if (x == 0) has_zero = true;
  }
  if (lo > 0) return Value::string("above_zero");
  if (hi < 0) return Value::string("below_zero");
  if (lo >= 0) return Value::string("non_negative");
  if (hi <= 0) return Value::string("non_positive");
  return Value::string(has_zero ? "non_none" : "non_zero");
}

static std::string hide_private_prefix(std::string s) {
  for (std::string_view p : {kToolPrefix, kLegacyToolPrefix}) {
    size_t pos;
    while ((pos = s.find(p)) != std::string::npos) s.erase(pos, p.size());
  }
  return s;
}

std::string short_api_name(std::string_view full) {
  // Keep "Class.method" when the second-to-last component looks like a class, else the last one.
  const size_t last = full.rfind('.');
  if (last == std::string_view::npos) return hide_private_prefix(std::string(full));
  const size_t prev = full.rfind('.', last - 1);
  std::string_view owner = full.substr(prev == std::string_view::npos ? 0 : prev + 1, last - (prev == std::string_view::npos ? 0 : prev + 1));
  if (!owner.empty() && std::isupper(static_cast<unsigned char>(owner.front())))
    return hide_private_prefix(std::string(full.substr(prev == std::string_view::npos ? 0 : prev + 1)));
  return hide_private_prefix(std::string(full.substr(last + 1)));
}

std::string short_type_name(std::string_view full) {
  const size_t last = full.rfind('.');
  return hide_private_prefix(std::string(last == std::string_view::npos ? full : full.substr(last + 1)));
}

std::string display_value(const Value& v) {
  if (v.is_null()) return "None";
  if (v.is_string()) {
    std::string s = v.as_string();
    std::replace(s.begin(), s.end(), '_', '-');
    return is_generalized_token(v) ? s : hide_private_prefix(v.as_string());
  }
  return traincheck::to_json(v);
}

}  // namespace traincheck
