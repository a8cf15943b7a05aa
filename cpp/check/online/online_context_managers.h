// Context managers entered on each thread while records stream in: the online counterpart of
// TraceStore::context_managers_at, for invariants whose preconditions name one
// ("meta_vars.context_managers.<X>", e.g. autocast for ConsistentOutput's dtype invariants).
//
// A manager X is live on a thread from its __enter__ post-record to its __exit__ pre-record, both
// included, with the arguments of the __init__ call on the same object (as offline). While any is live,
// the records of that thread are offered to the checks with one field per live manager added, so
// preconditions evaluate as they do on the enriched records of the offline check.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "invariant/invariant.h"
#include "trace/api_signatures.h"
#include "trace/record.h"

namespace traincheck {

class OnlineContextManagers {
 public:
  // `signatures` binds __init__ arguments (may be null); it must outlive this.
  OnlineContextManagers(std::set<std::string> managers, const ApiSignatures* signatures);

  // The managers the invariants' preconditions name.
  static std::set<std::string> named_by(const std::vector<Invariant>& invariants);

  bool empty() const { return managers_.empty(); }
  // The functions whose records this needs: X.__init__, X.__enter__ and X.__exit__ of each manager.
  std::vector<std::string> functions() const;

  // Call for every record, in order, before offering it: returns `r`, or `scratch` filled with `r`
  // plus the fields of the managers live on its thread.
  const Record& before(const Record& r, Record& scratch);
  // Call after offering it (an __exit__ pre-record is the last one its manager covers).
  void after(const Record& r);

  // Objects whose __init__ came and whose manager is not live, over all threads; for tests.
  size_t pending_inits() const { return pending_.size(); }
  // Cap on pending_inits(): an object constructed and never entered is forgotten past it.
  static constexpr size_t kMaxPendingInits = 1024;

 private:
  enum class Method { None, Init, Enter, Exit };
  Method method_of(const Record& r, std::string* manager) const;

  using ObjectKey = std::tuple<int64_t, int64_t, std::string>;  // (pid, tid, obj_id JSON)
  struct Live {
    ObjectKey object;
    KeyId field;  // "meta_vars.context_managers.<X>"
    Value args;
  };

  std::set<std::string> managers_;
  const ApiSignatures* signatures_;
  std::map<ObjectKey, Record> pending_;                           // the __init__ pre-record per object
  std::map<std::pair<int64_t, int64_t>, std::vector<Live>> live_;  // per thread, outermost first
};

}  // namespace traincheck
