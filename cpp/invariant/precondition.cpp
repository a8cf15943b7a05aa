#include "invariant/precondition.h"

#include <algorithm>
#include <unordered_set>

#include "trace/trace_store.h"

namespace traincheck {

const Value* RecordView::get(KeyId key) const {
  if (const Value* v = record->get(key)) return v;
  if (extra == nullptr) return nullptr;
  auto it = std::lower_bound(extra->begin(), extra->end(), key, [](const Field& f, KeyId k) { return f.key < k; });
  return it != extra->end() && it->key == key ? &it->value : nullptr;
}

std::vector<RecordView> make_enriched_views(const TraceStore& trace, std::span<const uint32_t> records,
                                            std::vector<Field>& storage) {
  std::vector<RecordView> views;
  views.reserve(records.size());
  if (records.empty()) return views;
  const Record* earliest = &trace.record(records.front());
  for (uint32_t i : records)
    if (trace.record(i).time < earliest->time) earliest = &trace.record(i);
  storage = trace.context_managers_at(earliest->time, earliest->process_id, earliest->thread_id);
  for (uint32_t i : records) views.push_back(RecordView{&trace.record(i), storage.empty() ? nullptr : &storage});
  return views;
}

std::string_view clause_type_name(ClauseType t) {
  switch (t) {
    case ClauseType::Constant: return "constant";
    case ClauseType::Consistent: return "consistent";
    case ClauseType::Unequal: return "unequal";
    case ClauseType::Exist: return "exist";
  }
  return "";
}

Clause Clause::make(ClauseType type, std::string prop_name, std::string prop_dtype, std::vector<Value> values,
                    Value additional_path) {
  Clause c;
  c.type = type;
  c.prop_key = intern_key(prop_name);
  c.prop_name = std::string(key_name(c.prop_key));
  c.prop_dtype = std::move(prop_dtype);
  c.values = std::move(values);
  c.additional_path = std::move(additional_path);
  return c;
}

const Value* Clause::lookup(const RecordView& r) const {
  const Value* v = r.get(prop_key);
  if (v == nullptr || !additional_path.is_array()) return v;
  for (const Value& step : additional_path.as_array()) {
    if (step.is_string()) {
      v = v->find(step.as_string());
    } else if (step.is_int() && v->is_array() && step.as_int() >= 0 &&
               static_cast<size_t>(step.as_int()) < v->as_array().size()) {
      v = &v->as_array()[static_cast<size_t>(step.as_int())];
    } else {
      return nullptr;
    }
    if (v == nullptr) return nullptr;
  }
  return v;
}

bool Clause::holds(std::span<const RecordView> example) const {
  std::vector<const Value*> seen;
  seen.reserve(example.size());
  for (const RecordView& r : example) {
    const Value* v = lookup(r);
    if (v == nullptr || v->is_nan()) return false;
    if (type != ClauseType::Exist && !v->is_hashable()) return false;
    seen.push_back(v);
  }
  switch (type) {
    case ClauseType::Exist: return true;
    case ClauseType::Constant:
    case ClauseType::Consistent: {
      for (const Value* v : seen)
        if (!(*v == *seen.front())) return false;
      if (type == ClauseType::Consistent || seen.empty()) return true;
      return std::any_of(values.begin(), values.end(), [&](const Value& c) { return c == *seen.front(); });
    }
    case ClauseType::Unequal: {
      std::unordered_set<Value, ValueHash> distinct;
      for (const Value* v : seen)
        if (!distinct.insert(*v).second) return false;
      return true;
    }
  }
  return false;
}

Value Clause::to_value() const {
  Object o;
  o.push_back({intern_key("type"), Value::string(std::string(clause_type_name(type)))});
  o.push_back({intern_key("prop_name"), Value::string(prop_name)});
  o.push_back({intern_key("additional_path"), additional_path.is_array() ? additional_path : Value::string("None")});
  o.push_back({intern_key("prop_dtype"), Value::string(prop_dtype)});
  if (type == ClauseType::Constant) o.push_back({intern_key("values"), Value::array(values)});
  return Value::object(std::move(o));
}

std::string Clause::key() const { return to_json(to_value()); }

bool Conjunction::holds(std::span<const RecordView> example) const {
  if (unconditional) return true;
  for (const Clause& c : clauses)
    if (!c.holds(example)) return false;
  return true;
}

Value Conjunction::to_value() const {
  if (unconditional) return make_object({{"clauses", Value::string("Unconditional")}});
  Array a;
  for (const Clause& c : clauses) a.push_back(c.to_value());
  return make_object({{"clauses", Value::array(std::move(a))}});
}

bool PreconditionGroup::holds(std::span<const RecordView> example) const {
  bool any = false;
  for (const Conjunction& c : disjuncts)
    if (c.holds(example)) {
      any = true;
      break;
    }
  return inverted ? !any : any;
}

bool PreconditionGroup::holds_on(const Record& record) const {
  const RecordView view{&record, nullptr};
  return holds(std::span<const RecordView>(&view, 1));
}

bool PreconditionGroup::holds_on(const Record& first, const Record& second) const {
  const RecordView views[2] = {RecordView{&first, nullptr}, RecordView{&second, nullptr}};
  return holds(views);
}

Value PreconditionGroup::to_value() const {
  Array a;
  for (const Conjunction& c : disjuncts) a.push_back(c.to_value());
  return make_object({{"inverted", Value::boolean(inverted)}, {"preconditions", Value::array(std::move(a))}});
}

PreconditionGroup PreconditionGroup::unconditional() {
  PreconditionGroup g;
  g.disjuncts.push_back(Conjunction{true, {}});
  return g;
}

const PreconditionGroup* GroupedPreconditions::find(std::string_view group) const {
  for (const auto& [name, g] : groups)
    if (name == group) return &g;
  return nullptr;
}

Value GroupedPreconditions::to_value() const {
  Object o;
  for (const auto& [name, g] : groups) o.push_back({intern_key(name), g.to_value()});
  return Value::object(std::move(o));
}

Clause clause_from_value(const Value& v) {
  if (!v.is_object()) throw PreconditionFormatError("", "a clause must be an object");
  const Value* type = v.find("type");
  if (type == nullptr || !type->is_string()) throw PreconditionFormatError("type", "missing or not a string");
  ClauseType t;
  const std::string& ts = type->as_string();
  if (ts == "constant") t = ClauseType::Constant;
  else if (ts == "consistent") t = ClauseType::Consistent;
  else if (ts == "unequal") t = ClauseType::Unequal;
  else if (ts == "exist") t = ClauseType::Exist;
  else throw PreconditionFormatError("type", "unknown clause type '" + ts + "'");
  const Value* prop = v.find("prop_name");
  if (prop == nullptr || !prop->is_string()) throw PreconditionFormatError("prop_name", "missing or not a string");
  Value path;
  if (const Value* p = v.find("additional_path"); p != nullptr && p->is_array()) path = *p;
  std::string dtype = "None";
  if (const Value* d = v.find("prop_dtype"); d != nullptr && d->is_string()) dtype = d->as_string();
  std::vector<Value> values;
  if (t == ClauseType::Constant) {
    const Value* vals = v.find("values");
    if (vals == nullptr || !vals->is_array()) throw PreconditionFormatError("values", "a constant clause needs a list of values");
    values = vals->as_array();
  }
  return Clause::make(t, prop->as_string(), std::move(dtype), std::move(values), std::move(path));
}

static Conjunction conjunction_from_value(const Value& v, const std::string& where) {
  Conjunction c;
  const Value* clauses = v.is_object() ? v.find("clauses") : &v;
  if (clauses != nullptr && clauses->is_string() && clauses->as_string() == "Unconditional") {
    c.unconditional = true;
    return c;
  }
  if (clauses == nullptr || !clauses->is_array())
    throw PreconditionFormatError(where + ".clauses", "expected a list of clauses or \"Unconditional\"");
  for (size_t i = 0; i < clauses->as_array().size(); ++i) {
    try {
      c.clauses.push_back(clause_from_value(clauses->as_array()[i]));
    } catch (const PreconditionFormatError& e) {
      throw PreconditionFormatError(where + ".clauses[" + std::to_string(i) + "]" + (e.field.empty() ? "" : "." + e.field), e.what());
    }
  }
  return c;
}

GroupedPreconditions preconditions_from_value(const Value& v) {
  GroupedPreconditions out;
  if (!v.is_object()) throw PreconditionFormatError("", "expected an object of precondition groups");
  for (const Member& m : v.as_object()) {
    const std::string name(key_name(m.key));
    PreconditionGroup g;
    const Value* list = &m.value;
    if (m.value.is_object()) {
      if (const Value* inv = m.value.find("inverted"); inv != nullptr && inv->is_bool()) g.inverted = inv->as_bool();
      list = m.value.find("preconditions");
    }
    if (list == nullptr || !list->is_array())
      throw PreconditionFormatError(name + ".preconditions", "missing or not a list");
    for (size_t i = 0; i < list->as_array().size(); ++i)
      g.disjuncts.push_back(conjunction_from_value(list->as_array()[i], name + ".preconditions[" + std::to_string(i) + "]"));
    out.groups.emplace_back(name, std::move(g));
  }
  return out;
}

// The recorder accepts the same names (python/traincheck/meta_vars.py, VALID_STAGES); sorted.
// tests/python/test_stage_names.py ties the two lists together.
const std::vector<std::string>& all_stage_names() {
  static const std::vector<std::string> names = {"checkpointing", "evaluation",     "inference", "init",
                                                 "postprocessing", "preprocessing", "testing",   "training"};
  return names;
}

void add_stage_info(PreconditionGroup& group, const std::vector<std::string>& valid_stages) {
  std::vector<std::string> valid = valid_stages;
  std::sort(valid.begin(), valid.end());
  if (group.inverted) {
    std::vector<Value> invalid;
    for (const std::string& s : all_stage_names())
      if (!std::binary_search(valid.begin(), valid.end(), s)) invalid.push_back(Value::string(s));
    if (invalid.empty()) return;
    Conjunction c;
    c.clauses.push_back(Clause::make(ClauseType::Constant, "meta_vars.stage", "str", std::move(invalid)));
    group.disjuncts.push_back(std::move(c));
    return;
  }
  std::vector<Value> values;
  for (const std::string& s : valid) values.push_back(Value::string(s));
  Clause stage = Clause::make(ClauseType::Constant, "meta_vars.stage", "str", values);
  for (Conjunction& c : group.disjuncts) {
    if (c.unconditional) {
      c.unconditional = false;
      c.clauses.clear();
    }
    c.clauses.push_back(stage);
  }
}

}  // namespace traincheck
