// FunctionCoverRelation / FunctionLeadRelation, online (the rules: function_order.cpp).
//
// Per thread, the latest call of the "opener" function (Cover: B, Lead: A) opens a window that the
// next call of the opener closes and judges: it passes when a complete call of the "inner" function
// (Cover: A, Lead: B) started after the window began and returned before. So a check needs, per
// thread: the opener's pre-record (the evidence), whether it is still running, when the window began,
// one flag for "an inner call completed in it", and the start times of inner calls now running.
// Nothing grows with the length of the run.
//
// Lead, a thread's only call of A: no next call closes its window, so it is judged at the end of the
// trace (on_trace_end), as offline: it passes when some call of B returned after it returned. Per
// thread that takes a count of A's calls (up to 2) and one flag.
//
// Verdicts equal the offline check's on a finished trace, given records carrying their live context
// managers (the OnlineChecker adds them: check/online/online_context_managers.h).
#include <algorithm>
#include <utility>

#include "relations/call_key.h"
#include "relations/function_order.h"

namespace traincheck {

FunctionOrderOnlineCheck::FunctionOrderOnlineCheck(FunctionOrder order, std::string first, std::string second,
                                                   std::optional<PreconditionGroup> precondition)
    : order_(order),
      opener_fn_(order == FunctionOrder::Cover ? std::move(second) : std::move(first)),
      inner_fn_(order == FunctionOrder::Cover ? std::move(first) : std::move(second)),
      opener_name_(opener_fn_),
      inner_name_(inner_fn_),
      precondition_(std::move(precondition)) {}

OnlineInterest FunctionOrderOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  i.functions = {opener_fn_, inner_fn_};
  return i;
}

size_t FunctionOrderOnlineCheck::open_calls() const {
  size_t n = 0;
  for (const auto& [key, t] : threads_) n += t.open_inner.size() + t.open_openers.size();
  return n;
}

bool FunctionOrderOnlineCheck::precondition_holds(const Record& pre) const {
  return !precondition_ || precondition_->holds_on(pre);
}

void FunctionOrderOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!r.is_api() || (r.function != opener_name_ && r.function != inner_name_)) return;
  Thread& thread = thread_of(r);
  const bool opener = r.function == opener_name_;
  if (r.type == RecordType::FunctionPre) {
    if (opener) on_opener_pre(thread, r, violations);
    else thread.open_inner.insert_or_assign(call_key(r), r.time);
    return;
  }
  if (opener) on_opener_return(thread, r);
  else on_inner_return(thread, r);
}

// The window open on the thread spans the loss: the thread starts afresh, except that the next call of
// the opener judges nothing (the window it closes began before the loss), and no call of A is the
// thread's only one (Lead's judgement at the end: one may have been lost).
void FunctionOrderOnlineCheck::on_records_lost(int64_t process_id, int64_t thread_id) {
  Thread& t = threads_[{process_id, thread_id}];
  t = Thread{};
  t.after_loss = true;
  t.openers = 2;
}

FunctionOrderOnlineCheck::Thread& FunctionOrderOnlineCheck::thread_of(const Record& r) {
  const std::pair<int64_t, int64_t> key{r.process_id, r.thread_id};
  if (last_thread_ == nullptr || key != last_thread_key_) {
    last_thread_ = &threads_[key];
    last_thread_key_ = key;
  }
  return *last_thread_;
}

void FunctionOrderOnlineCheck::on_opener_pre(Thread& t, const Record& pre, std::vector<OnlineViolation>& violations) {
  // The subject whose precondition decides: Cover, this call of B; Lead, the previous call of A.
  const bool judged = !t.after_loss && (order_ == FunctionOrder::Cover || t.opener.has_value());
  t.after_loss = false;
  const bool precondition = order_ == FunctionOrder::Cover ? precondition_holds(pre) : t.opener_precondition;
  if (judged && precondition) {
    triggered_ = true;
    const bool nested = order_ == FunctionOrder::Cover ? !t.open_openers.empty() : !t.opener_closed;
    if (nested || !t.inner_seen) {
      OnlineViolation v{{pre}};
      if (t.opener) v.records.push_back(*t.opener);
      violations.push_back(std::move(v));
    }
  }
  t.opener.hold(pre, lasting_records_);
  t.opener_id = call_key(pre);
  t.opener_closed = false;
  if (order_ == FunctionOrder::Lead) t.opener_precondition = precondition_holds(pre);
  t.inner_seen = false;  // an inner call completed before now started before the next window
  t.open_openers.insert(t.opener_id);
  if (t.openers < 2) ++t.openers;
}

void FunctionOrderOnlineCheck::on_opener_return(Thread& t, const Record& post) {
  const uint64_t id = call_key(post);
  if (t.open_openers.erase(id) == 0) return;  // its pre-record was not seen
  if (order_ == FunctionOrder::Cover) {
    // The next window begins after every call of B so far has returned.
    t.window_start = std::max(t.window_start, post.time);
    t.inner_seen = false;
  } else if (id == t.opener_id) {
    t.opener_closed = true;
    t.window_start = post.time;
    t.inner_seen = false;
  }
}

void FunctionOrderOnlineCheck::on_inner_return(Thread& t, const Record& post) {
  auto it = t.open_inner.find(call_key(post));
  if (it == t.open_inner.end()) return;
  const int64_t start = it->second;
  t.open_inner.erase(it);
  // Offline, any call of B that returned (raised too) after a thread's only call of A did passes it.
  if (order_ == FunctionOrder::Lead && t.openers == 1 && t.opener_closed && post.time > t.window_start)
    t.inner_returned_after_opener = true;
  if (post.type != RecordType::FunctionPost) return;  // raised: not a complete call
  const bool window_open = order_ == FunctionOrder::Cover || (t.opener.has_value() && t.opener_closed);
  if (window_open && start > t.window_start) t.inner_seen = true;
}

void FunctionOrderOnlineCheck::on_trace_end(std::vector<OnlineViolation>& violations) {
  if (order_ != FunctionOrder::Lead) return;
  for (const auto& [key, t] : threads_) {
    // A call of A still running at the end is incomplete: offline leaves it out, so nothing is judged.
    if (t.openers != 1 || !t.opener_closed || !t.opener_precondition) continue;
    triggered_ = true;
    if (!t.inner_returned_after_opener) violations.push_back(OnlineViolation{{*t.opener}});
  }
}

void OnlineCheckChain::on_record(const Record& record, std::vector<OnlineViolation>& violations) {
  for (const std::unique_ptr<OnlineCheck>& c : checks_) c->on_record(record, violations);
}

void OnlineCheckChain::feed_lasting_records() {
  OnlineCheck::feed_lasting_records();
  for (const std::unique_ptr<OnlineCheck>& c : checks_) c->feed_lasting_records();
}

bool OnlineCheckChain::triggered() const {
  for (const std::unique_ptr<OnlineCheck>& c : checks_)
    if (c->triggered()) return true;
  return false;
}

void OnlineCheckChain::on_trace_end(std::vector<OnlineViolation>& violations) {
  for (const std::unique_ptr<OnlineCheck>& c : checks_) c->on_trace_end(violations);
}

void OnlineCheckChain::on_records_lost(int64_t process_id, int64_t thread_id) {
  for (const std::unique_ptr<OnlineCheck>& c : checks_) c->on_records_lost(process_id, thread_id);
}

OnlineInterest OnlineCheckChain::interest() const {
  OnlineInterest out;
  out.all_records = false;
  for (const std::unique_ptr<OnlineCheck>& c : checks_) {
    const OnlineInterest i = c->interest();
    out.all_records = out.all_records || i.all_records;
    out.functions.insert(out.functions.end(), i.functions.begin(), i.functions.end());
    out.var_types.insert(out.var_types.end(), i.var_types.begin(), i.var_types.end());
  }
  return out;
}

}  // namespace traincheck
