#include "check/online/online_context_managers.h"

#include <algorithm>

#include "trace/trace_store.h"
#include "trace/value.h"

namespace traincheck {

namespace {

std::string object_of(const Record& r) {
  const Value* obj = r.get(keys().obj_id);
  return obj != nullptr ? to_json(*obj) : std::string("null");
}

}  // namespace

OnlineContextManagers::OnlineContextManagers(std::set<std::string> managers, const ApiSignatures* signatures)
    : managers_(std::move(managers)), signatures_(signatures) {}

std::set<std::string> OnlineContextManagers::named_by(const std::vector<Invariant>& invariants) {
  std::set<std::string> out;
  for (const Invariant& inv : invariants) out.merge(context_managers_named(inv));
  return out;
}

std::vector<std::string> OnlineContextManagers::functions() const {
  std::vector<std::string> out;
  for (const std::string& m : managers_)
    for (const char* method : {".__init__", ".__enter__", ".__exit__"}) out.push_back(m + method);
  return out;
}

OnlineContextManagers::Method OnlineContextManagers::method_of(const Record& r, std::string* manager) const {
  if (!r.is_api()) return Method::None;
  const std::string_view fn = r.function;
  for (const auto& [suffix, method] : {std::pair<std::string_view, Method>{".__init__", Method::Init},
                                       {".__enter__", Method::Enter}, {".__exit__", Method::Exit}}) {
    if (!fn.ends_with(suffix)) continue;
    std::string name(fn.substr(0, fn.size() - suffix.size()));
    // Any class's __exit__ closes what its object entered (a subclass overriding __exit__ only), as the
    // store pairs them (TraceStore::index_context_managers).
    if (method == Method::Exit && !managers_.count(name) && r.get(keys().obj_id) != nullptr) {
      *manager = std::move(name);
      return method;
    }
    if (!managers_.count(name)) return Method::None;
    *manager = std::move(name);
    return method;
  }
  return Method::None;
}

const Record& OnlineContextManagers::before(const Record& r, Record& scratch) {
  std::string manager;
  const Method method = method_of(r, &manager);
  if (method == Method::Init && r.type == RecordType::FunctionPre) {
    if (pending_.size() >= kMaxPendingInits) pending_.clear();
    pending_.insert_or_assign(ObjectKey{r.process_id, r.thread_id, object_of(r)}, r);
  } else if (method == Method::Enter && r.type == RecordType::FunctionPost) {
    ObjectKey key{r.process_id, r.thread_id, object_of(r)};
    static const ApiSignatures kNoSignatures;
    auto init = pending_.find(key);
    Value args = init != pending_.end() ? context_manager_arguments(init->second, signatures_ ? *signatures_ : kNoSignatures)
                                        : Value::object({});
    if (init != pending_.end()) pending_.erase(init);
    live_[{r.process_id, r.thread_id}].push_back(Live{std::move(key), intern_key(std::string(kContextManagerFieldPrefix) + manager), std::move(args)});
  }
  auto thread = live_.find({r.process_id, r.thread_id});
  if (thread == live_.end() || thread->second.empty()) return r;
  scratch = r;
  for (const Live& l : thread->second) scratch.set(l.field, l.args);  // an inner one of the same manager wins
  scratch.refresh_cached();
  return scratch;
}

void OnlineContextManagers::after(const Record& r) {
  std::string manager;
  if (method_of(r, &manager) != Method::Exit || r.type != RecordType::FunctionPre) return;
  auto thread = live_.find({r.process_id, r.thread_id});
  if (thread == live_.end()) return;
  const ObjectKey key{r.process_id, r.thread_id, object_of(r)};
  std::vector<Live>& live = thread->second;
  auto it = std::find_if(live.rbegin(), live.rend(), [&](const Live& l) { return l.object == key; });
  if (it != live.rend()) live.erase(std::next(it).base());
  if (live.empty()) live_.erase(thread);
}

}  // namespace traincheck
