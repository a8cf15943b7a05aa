#include "trace/api_signatures.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace traincheck {

ApiSignatures ApiSignatures::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::string text, error;
  if (!read_file(path, text, error)) throw TraceReadError(path, 0, "", error);
  Value root;
  if (!parse_json(text, root, error)) throw TraceReadError(path, 0, "", "invalid JSON: " + error);
  return from_value(root, path);
}

ApiSignatures ApiSignatures::from_value(const Value& root, const std::string& source) {
  ApiSignatures out;
  if (!root.is_object()) throw TraceReadError(source, 0, "", "expected an object of API names");
  for (const Member& api : root.as_object()) {
    const std::string name(key_name(api.key));
    const Value* params = api.value.find("params");
    if (params == nullptr || !params->is_array())
      throw TraceReadError(source, 0, name + ".params", "missing or not a list");
    std::vector<SignatureParam> list;
    for (const Value& p : params->as_array()) {
      const Value* pname = p.find("name");
      if (pname == nullptr || !pname->is_string())
        throw TraceReadError(source, 0, name + ".params[].name", "missing or not a string");
      SignatureParam sp;
      sp.name = pname->as_string();
      if (const Value* kind = p.find("kind"); kind != nullptr && kind->is_string()) sp.kind = kind->as_string();
      if (const Value* def = p.find("default")) sp.default_value = *def;
      list.push_back(std::move(sp));
    }
    out.table_[name] = std::move(list);
  }
  return out;
}

const std::vector<SignatureParam>* ApiSignatures::find(std::string_view api) const {
  auto it = table_.find(std::string(api));
  return it == table_.end() ? nullptr : &it->second;
}

void ApiSignatures::merge(const ApiSignatures& other) {
  for (const auto& [k, v] : other.table_) table_.emplace(k, v);
}

Object ApiSignatures::bind(const Record& pre, bool skip_self, bool with_defaults) const {
  const WellKnownKeys& k = keys();
  const std::vector<SignatureParam>* sig = find(pre.function);
  const Value* bound_flag = pre.get(k.is_bound_method);
  const bool is_bound = bound_flag != nullptr && bound_flag->is_bool() && bound_flag->as_bool();
  Object out;
  auto add = [&](std::string_view name, const Value& v) {
    const KeyId id = intern_key(name);
    for (const Member& m : out)
      if (m.key == id) return;
    out.push_back({id, v});
  };
  if (const Value* args = pre.get(k.args); args != nullptr && args->is_object()) {
    // Positional args in index order (the object's key order is not guaranteed to be numeric).
    std::vector<std::pair<size_t, const Value*>> positional;
    for (const Member& m : args->as_object()) {
      std::string_view key = key_name(m.key);
      size_t index = 0;
      auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
      if (ec != std::errc() || ptr != key.data() + key.size()) continue;
      positional.push_back({index, &m.value});
    }
    std::sort(positional.begin(), positional.end());
    for (const auto& [index, value] : positional) {
      if (skip_self && is_bound && index == 0) continue;
      std::string name = std::to_string(index);
      // As the original binds them (and so names them in its invariant files): positional i takes the
      // name of parameter i whatever its kind, so the first argument *args catches is named after it.
      if (sig != nullptr && index < sig->size()) name = (*sig)[index].name;
      if (skip_self && sig != nullptr && index < sig->size() && (*sig)[index].name == "self") continue;
      add(name, *value);
    }
  }
  if (const Value* kwargs = pre.get(k.kwargs); kwargs != nullptr && kwargs->is_object())
    for (const Member& m : kwargs->as_object()) add(key_name(m.key), m.value);
  if (with_defaults && sig != nullptr) {
    for (const SignatureParam& p : *sig) {
      if (!p.default_value || p.name == "self") continue;
      add(p.name, *p.default_value);
    }
  }
  return out;
}

}  // namespace traincheck
