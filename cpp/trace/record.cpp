#include "trace/record.h"

#include <algorithm>

#include "common/assert.h"

namespace traincheck {

std::string_view record_type_name(RecordType t) {
  switch (t) {
    case RecordType::FunctionPre: return "function_call (pre)";
    case RecordType::FunctionPost: return "function_call (post)";
    case RecordType::FunctionException: return "function_call (post) (exception)";
    case RecordType::StateChange: return "state_change";
  }
  return "";
}

std::optional<RecordType> parse_record_type(std::string_view s) {
  if (s == "function_call (pre)") return RecordType::FunctionPre;
  if (s == "function_call (post)") return RecordType::FunctionPost;
  if (s == "function_call (post) (exception)") return RecordType::FunctionException;
  if (s == "state_change") return RecordType::StateChange;
  return std::nullopt;
}

static const Value* find_sorted(const std::vector<Field>& sorted, KeyId key) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), key, [](const Field& f, KeyId k) { return f.key < k; });
  return it != sorted.end() && it->key == key ? &it->value : nullptr;
}

const Value* Record::get(KeyId key) const {
  if (const Value* own = find_sorted(fields, key)) return own;
  return shared_fields.is_object() ? find_sorted(shared_fields.as_object(), key) : nullptr;
}

const Value* Record::get(std::string_view flat_key) const {
  auto id = find_key(flat_key);
  return id ? get(*id) : nullptr;
}

void Record::set(KeyId key, Value value) {
  auto it = std::lower_bound(fields.begin(), fields.end(), key,
                             [](const Field& f, KeyId k) { return f.key < k; });
  if (it != fields.end() && it->key == key) {
    it->value = std::move(value);
    return;
  }
  if (shared_fields_common && shared_fields.is_object() && find_sorted(shared_fields.as_object(), key) != nullptr)
    shared_fields_common = false;
  fields.insert(it, Field{key, std::move(value)});
}

void Record::share_fields() {
  if (!shared_fields.is_null() || fields.empty()) return;
  shared_fields = Value::object(std::move(fields));
  fields = {};
}

bool Record::shadows_shared_fields() const {
  if (!shared_fields.is_object()) return false;
  const Object& shared = shared_fields.as_object();
  return std::any_of(fields.begin(), fields.end(), [&](const Field& f) { return find_sorted(shared, f.key) != nullptr; });
}

std::string_view Record::func_call_id() const {
  const Value* v = get(keys().func_call_id);
  return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

Record::KnownFields Record::known_fields() const {
  const WellKnownKeys& k = keys();
  KnownFields known;
  // A key given twice in a line keeps its first value here, as get() (the first of equal keys) does, so
  // the cached names and the fields never disagree.
  auto take = [](const Value*& slot, const Field& f) {
    if (slot == nullptr) slot = &f.value;
  };
  for_each_field([&](const Field& f) {
    if (f.key == k.type) take(known.type, f);
    else if (f.key == k.process_id) take(known.process_id, f);
    else if (f.key == k.thread_id) take(known.thread_id, f);
    else if (f.key == k.time) take(known.time, f);
    else if (f.key == k.meta_vars_step) take(known.step, f);
    else if (f.key == k.function) take(known.function, f);
    else if (f.key == k.func_call_id) take(known.func_call_id, f);
    else if (f.key == k.var_name) take(known.var_name, f);
    else if (f.key == k.var_type) take(known.var_type, f);
    else if (f.key == k.meta_vars_stage) take(known.stage, f);
  });
  return known;
}

void Record::refresh_cached() { refresh_cached(known_fields()); }

void Record::refresh_cached(const KnownFields& known) {
  TC_ASSERT(std::is_sorted(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.key < b.key; }),
            "a record's fields are sorted by key (get and set search them)");
  auto int_of = [](const Value* v) -> int64_t { return v != nullptr && v->is_number() ? v->as_int() : 0; };
  process_id = int_of(known.process_id);
  thread_id = int_of(known.thread_id);
  time = int_of(known.time);
  has_step = known.step != nullptr && known.step->is_number() && !known.step->is_nan();
  step = has_step ? known.step->as_int() : 0;
  function = Name::of(known.function);
  var_name = Name::of(known.var_name);
  var_type = Name::of(known.var_type);
  stage = Name::of(known.stage);
}

Value Record::to_value() const {
  Object o;
  o.reserve(fields.size() + (shared_fields.is_object() ? shared_fields.as_object().size() : 0));
  for_each_field([&](const Field& f) { o.push_back(f); });
  // By name: fields are stored by key id, an order that depends on which parser thread met a name
  // first, and written records (failed.log) must not.
  std::sort(o.begin(), o.end(), [](const Member& a, const Member& b) { return key_name(a.key) < key_name(b.key); });
  return Value::object(std::move(o));
}

static bool keep_nested(KeyId key) {
  const WellKnownKeys& k = keys();
  return key == k.args || key == k.kwargs || key == k.return_values;
}

static void flatten_into(const Object& obj, const std::string& prefix, std::vector<Field>& out) {
  for (const Member& m : obj) {
    const bool top = prefix.empty();
    if (m.value.is_object() && !m.value.as_object().empty() && !(top && keep_nested(m.key))) {
      std::string child_prefix = prefix;
      child_prefix += key_name(m.key);
      child_prefix += '.';
      flatten_into(m.value.as_object(), child_prefix, out);
    } else {
      out.push_back({top ? m.key : intern_key(prefix + std::string(key_name(m.key))), m.value});
    }
  }
}

void flatten_record_object(const Value& object, std::vector<Field>& out) {
  out.clear();
  if (!object.is_object()) return;
  flatten_into(object.as_object(), std::string(), out);
  std::stable_sort(out.begin(), out.end(), [](const Field& a, const Field& b) { return a.key < b.key; });
}

}  // namespace traincheck
