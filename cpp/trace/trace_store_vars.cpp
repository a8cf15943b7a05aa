// TraceStore: variable state histories and context-manager liveness (docs/analysis.md §Trace model).
#include <algorithm>
#include <map>
#include <tuple>

#include "trace/trace_store.h"

namespace traincheck {

bool is_untracked_attribute(std::string_view a) {
  return a.starts_with("is_") || a.starts_with("has_") || a.starts_with("can_") ||
         a.find("_TRAINCHECK") != std::string_view::npos || a.find("_ML_DAIKON") != std::string_view::npos;
}

const AttrHistory* VarInstance::attr(std::string_view name) const {
  for (const AttrHistory& h : attrs)
    if (h.name == name) return &h;
  return nullptr;
}

void TraceStore::index_vars() {
  std::map<std::tuple<int64_t, std::string_view, std::string_view>, uint32_t> by_id;
  // Per var instance: attribute key -> slot in attrs, its state records, and per attribute how many of
  // them hold it. An attribute's own record list is made only when it is not in all of them (rare):
  // building one per attribute and dropping most for the shared list left a third of the store's memory
  // behind as freed blocks (bench/memory_bench).
  std::vector<std::unordered_map<KeyId, uint32_t>> slots;
  std::vector<std::vector<uint32_t>> var_records;
  std::vector<std::vector<uint32_t>> held;  // per var, per attr slot
  std::vector<std::pair<std::string_view, const Field*>> attributes;  // of one record
  for (uint32_t ri = 0; ri < records_.size(); ++ri) {
    const Record& r = records_[ri];
    if (r.type != RecordType::StateChange) continue;
    auto [it, inserted] = by_id.try_emplace({r.process_id, r.var_name, r.var_type}, static_cast<uint32_t>(vars_.size()));
    if (inserted) {
      vars_.push_back(VarInstance{r.process_id, r.var_name, r.var_type, {}});
      slots.emplace_back();
      var_records.emplace_back();
      held.emplace_back();
    }
    const uint32_t vi = it->second;
    VarInstance& var = vars_[vi];
    var_records[vi].push_back(ri);
    // Attributes by name, not by key id: ids follow the order in which parser threads met the names,
    // and the order of attrs and of one record's changes reaches the relations' output.
    attributes.clear();
    r.for_each_field([&](const Field& f) {
      std::string_view key = key_name(f.key);
      if (!key.starts_with(kAttributeFieldPrefix)) return;
      std::string_view attr = key.substr(kAttributeFieldPrefix.size());
      if (!is_state_value(attr, f.value)) return;
      attributes.emplace_back(attr, &f);
    });
    std::sort(attributes.begin(), attributes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [attr, field] : attributes) {
      const Field& f = *field;
      auto [slot_it, new_slot] = slots[vi].try_emplace(f.key, static_cast<uint32_t>(var.attrs.size()));
      if (new_slot) {
        var.attrs.emplace_back();
        var.attrs.back().key = f.key;
        var.attrs.back().name = std::string(attr);
        var.attrs.back().last_end = end_time_;
        held[vi].push_back(0);
      }
      AttrHistory& h = var.attrs[slot_it->second];
      const uint32_t position = held[vi][slot_it->second]++;  // in the attribute's records
      if (!starts_new_state(h.states.empty() ? nullptr : &h.states.back().value, f.value)) continue;
      h.states.push_back(AttrState{f.value, position, r.time});
      if (h.states.size() > 1)
        changes_by_process_[r.process_id].push_back(VarChange{vi, slot_it->second, static_cast<uint32_t>(h.states.size() - 1)});
    }
  }
  // Records are visited in time order, so each process's change list is already sorted. Lists keep the
  // capacity their growth left: memory never written is never resident, and shrinking them copied each
  // and left the old, written block behind in the heap (bench/memory_bench).
  for (uint32_t vi = 0; vi < vars_.size(); ++vi) {
    auto all = std::make_shared<std::vector<uint32_t>>(std::move(var_records[vi]));
    for (uint32_t a = 0; a < vars_[vi].attrs.size(); ++a) {
      AttrHistory& h = vars_[vi].attrs[a];
      // Held by every state record: its records are the variable's.
      if (held[vi][a] == all->size()) {
        h.records_ = all;
        continue;
      }
      h.records_->reserve(held[vi][a]);
      for (uint32_t ri : *all)
        if (state_value(records_[ri], h.key) != nullptr) h.records_->push_back(ri);
      TC_ASSERT(h.records_->size() == held[vi][a], "an attribute's records are those that held a state value of it");
    }
  }
}

namespace {

// {"bool": true} -> true: the original binds the argument values, not their type-tagged encoding.

bool is_context_manager_excluded(std::string_view name) {
  return name.find("torch.autograd.grad_mode") != std::string_view::npos ||
         name.find("record_function") != std::string_view::npos;
}

}  // namespace

void TraceStore::index_context_managers() {
  cm_spans_by_thread_.assign(threads_.size(), {});
  constexpr std::string_view kEnter = ".__enter__";
  std::vector<std::string_view> managers, exits;
  for (std::string_view fn : functions_) {
    if (fn.ends_with(kEnter) && !is_context_manager_excluded(fn)) managers.push_back(fn.substr(0, fn.size() - kEnter.size()));
    if (fn.ends_with(".__exit__")) exits.push_back(fn);
  }
  const KeyId obj_id_key = keys().obj_id;
  for (std::string_view cm : managers) {
    const std::string init = std::string(cm) + ".__init__";
    const std::string enter = std::string(cm) + ".__enter__";
    const std::string exit = std::string(cm) + ".__exit__";
    // Per (thread, obj_id): the pending __init__ pre-record and the open span.
    struct Pending {
      uint32_t init_pre = kNone;
      int64_t enter_time = 0;
      bool open = false;
    };
    std::map<std::pair<uint32_t, std::string>, Pending> pending;
    std::vector<std::tuple<int64_t, int, uint32_t>> events;  // (time, kind, call); kind 0 init, 1 enter, 2 exit
    for (uint32_t c : calls_of(init)) events.emplace_back(calls_[c].start, 0, c);
    for (uint32_t c : calls_of(enter))
      if (calls_[c].post != kNone) events.emplace_back(calls_[c].end, 1, c);
    // A manager's __exit__ may be another class's: a subclass that overrides __exit__ only (torch.save's
    // _open_file exits what _opener.__enter__ entered). Any class's __exit__ on the same object closes the
    // span; without an object id, only the manager's own does.
    for (std::string_view other : exits)
      for (uint32_t c : calls_of(other))
        if (other == exit || records_[calls_[c].pre].get(obj_id_key) != nullptr) events.emplace_back(calls_[c].start, 2, c);
    std::sort(events.begin(), events.end());
    for (const auto& [time, kind, ci] : events) {
      const CallEvent& call = calls_[ci];
      const Value* obj = records_[call.pre].get(obj_id_key);
      Pending& p = pending[{call.thread, obj ? to_json(*obj) : std::string("null")}];
      if (kind == 0) {
        p.init_pre = call.pre;
      } else if (kind == 1) {
        p.enter_time = time;
        p.open = true;
      } else if (p.open) {
        ContextManagerSpan span;
        span.name = std::string(cm);
        span.process_id = process_of(call);
        span.thread_id = thread_id_of(call);
        span.start = p.enter_time;
        span.end = time;
        span.args = p.init_pre != kNone ? context_manager_arguments(records_[p.init_pre], signatures_) : Value::object({});
        cm_spans_by_thread_[call.thread].push_back(static_cast<uint32_t>(cm_spans_.size()));
        cm_spans_.push_back(std::move(span));
        p.open = false;
      }
    }
    // Managers entered and never exited stay live to the end of the trace.
    for (auto& [key, p] : pending) {
      if (!p.open) continue;
      ContextManagerSpan span;
      span.name = std::string(cm);
      span.process_id = threads_[key.first].process_id;
      span.thread_id = threads_[key.first].thread_id;
      span.start = p.enter_time;
      span.end = end_time_;
      span.args = p.init_pre != kNone ? context_manager_arguments(records_[p.init_pre], signatures_) : Value::object({});
      cm_spans_by_thread_[key.first].push_back(static_cast<uint32_t>(cm_spans_.size()));
      cm_spans_.push_back(std::move(span));
    }
  }
}

Value context_manager_arguments(const Record& init_pre, const ApiSignatures& signatures) {
  // Recorded arguments are {type: payload}; a scalar payload is what preconditions compare.
  auto unwrap = [](const Value& v) {
    if (v.is_object() && v.as_object().size() == 1 && v.as_object().front().value.is_hashable()) return v.as_object().front().value;
    return v;
  };
  Object args;
  for (Member& m : signatures.bind(init_pre, true, true)) args.push_back({m.key, unwrap(m.value)});
  return Value::object(std::move(args));
}

std::vector<Field> TraceStore::context_managers_at(int64_t time, int64_t pid, int64_t tid) const {
  std::vector<Field> out;
  const uint32_t t = thread_index(pid, tid);
  if (t == kNone) return out;
  // One field per manager: of two live spans of one manager (nested, or entered and never exited), the
  // inner one, the latest entered, as the online checker's tracking has it (online_context_managers.h).
  // Two fields of one key made the precondition learner count an example twice.
  std::vector<std::pair<int64_t, Field>> live;
  for (uint32_t si : cm_spans_by_thread_[t]) {
    const ContextManagerSpan& s = cm_spans_[si];
    if (s.start <= time && time <= s.end)
      live.push_back({s.start, Field{intern_key(std::string(kContextManagerFieldPrefix) + s.name), s.args}});
  }
  std::stable_sort(live.begin(), live.end(), [](const auto& a, const auto& b) {
    return a.second.key != b.second.key ? a.second.key < b.second.key : a.first > b.first;
  });
  for (auto& [start, field] : live)
    if (out.empty() || out.back().key != field.key) out.push_back(std::move(field));
  return out;
}

}  // namespace traincheck
