#include "trace/api_signatures.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "common/console_text.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace traincheck {

ApiSignatures ApiSignatures::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::string text, error;
  if (!read_file(path, text, error)) throw TraceReadError(path, 0, "", error);
  Value root;
  if (!parse_json(text, root, error)) {
    // The DOM parser only says what went wrong; a second, on-demand walk says where.
    const size_t at = json_error_offset(text);
    if (at == std::string_view::npos) throw TraceReadError(path, 0, "", "invalid JSON: " + error);
    const TextPosition p = text_position(text, at);
    throw TraceReadError(path, p.line, "", "invalid JSON at column " + std::to_string(p.column) + ": " + error);
  }
  // Errors name the line of the API's key: the member offsets follow the parsed object's order.
  const std::vector<size_t> offsets = json_member_offsets(text);
  return from_value_at(root, path, [&](size_t member) -> size_t {
    return member < offsets.size() ? text_position(text, offsets[member]).line : 0;
  });
}

ApiSignatures ApiSignatures::from_value(const Value& root, const std::string& source) {
  return from_value_at(root, source, [](size_t) -> size_t { return 0; });
}

ApiSignatures ApiSignatures::from_value_at(const Value& root, const std::string& source,
                                           const std::function<size_t(size_t)>& line_of_member) {
  ApiSignatures out;
  if (!root.is_object()) throw TraceReadError(source, 0, "", "expected an object of API names");
  const Object& apis = root.as_object();
  for (size_t i = 0; i < apis.size(); ++i) {
    const Member& api = apis[i];
    const std::string name(key_name(api.key));
    const Value* params = api.value.find("params");
    if (params == nullptr || !params->is_array())
      throw TraceReadError(source, line_of_member(i), name + ".params", "missing or not a list");
    std::vector<SignatureParam> list;
    const Array& items = params->as_array();
    for (size_t j = 0; j < items.size(); ++j) {
      const Value& p = items[j];
      const Value* pname = p.find("name");
      if (pname == nullptr || !pname->is_string())
        throw TraceReadError(source, line_of_member(i), name + ".params[" + std::to_string(j) + "].name", "missing or not a string");
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

void ApiSignatures::note_missing(std::string_view api) const {
  std::lock_guard<std::mutex> lock(misses_->mutex);
  if (misses_->names.find(api) == misses_->names.end()) misses_->names.emplace(api);
}

std::vector<std::string> ApiSignatures::missing() const {
  std::lock_guard<std::mutex> lock(misses_->mutex);
  std::vector<std::string> out;
  for (const std::string& name : misses_->names)
    if (find(name) == nullptr) out.push_back(name);
  return out;
}

Object ApiSignatures::bind(const Record& pre, bool skip_self, bool with_defaults) const {
  const WellKnownKeys& k = keys();
  const std::vector<SignatureParam>* sig = find(pre.function);
  bool lacked_signature = sig == nullptr && with_defaults;  // defaults unknown
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
      if (sig == nullptr) lacked_signature = true;
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
  if (lacked_signature && !pre.function.empty()) note_missing(pre.function);
  return out;
}

namespace {

// The first names, then how many more.
std::string named_list(const std::vector<std::string>& names) {
  constexpr size_t kNamed = 8;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamed; ++i) out += (i ? ", " : "") + console_text(names[i], 120);
  if (names.size() > kNamed) out += " and " + std::to_string(names.size() - kNamed) + " more";
  return out;
}

}  // namespace

std::string missing_signatures_message(const std::vector<std::string>& names) {
  return "no signature recorded for " + std::to_string(names.size()) + (names.size() == 1 ? " API" : " APIs") +
         " whose arguments the invariants read (api_signatures.json missing, not written yet, or from another "
         "run); their positional arguments are named by index, so invariants over them may be judged wrongly: " +
         named_list(names);
}

std::string builtin_signatures_message(const std::vector<std::string>& names) {
  return std::to_string(names.size()) + (names.size() == 1 ? " API has" : " APIs have") +
         " no signature (builtins, named by position as at inference): " + named_list(names);
}

}  // namespace traincheck
