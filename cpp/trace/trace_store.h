// The indexed, read-only view of one trace that inference and checking query (docs/analysis.md §Trace model).
//
// Built once from the reader's records (then immutable, so any number of threads may query it):
//   - records in global time order (stable: ties keep file order);
//   - function calls: pre/post pairs by func_call_id, per function and per (process, thread), with
//     incomplete calls resolved (see below);
//   - variable instances (process, var_name, var_type) with per-attribute state histories (liveness
//     intervals, consecutive equal values merged) and the var changes between states, per process;
//   - context-manager liveness spans with their bound __init__ arguments.
//
// Incomplete calls: per thread, calls are matched with a stack. A call still open when its thread's
// records end (the process was killed inside it) is kept as Incomplete, ending at the trace end. A call
// whose post-record is missing although its caller returned (a lost record) is dropped with a warning.
// The original instead truncates the thread's records after such a call (docs/analysis.md §Trace model);
// keeping them loses nothing, since incomplete calls are never examples and never checked.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/assert.h"
#include "trace/api_signatures.h"
#include "trace/record.h"
#include "trace/trace_reader.h"
#include "trace/var_state.h"

namespace traincheck {

inline constexpr uint32_t kNone = 0xFFFFFFFFu;

enum class CallStatus : uint8_t { Complete, Exception, Incomplete };

// 32 bytes: a trace holds about one call per two lines, so what the pre-record or the thread already
// says (function, process, thread id) is read from there (TraceStore::function_of, process_of).
struct CallEvent {
  uint32_t pre = kNone;   // record index
  uint32_t post = kNone;  // record index of the post or exception record; kNone when incomplete
  uint32_t thread = 0;    // index into TraceStore::threads()
  CallStatus status = CallStatus::Incomplete;
  int64_t start = 0;      // pre.time
  int64_t end = 0;        // post.time, or the trace end when incomplete
};
static_assert(sizeof(CallEvent) == 32, "a call is four indices and two times");

// 24 bytes: a digest (data, grad) changes at every record, and a trace holds millions of states. Where
// a state ends and how many records hold it follow from the next state (AttrHistory::end_of, records_of).
struct AttrState {
  Value value;
  uint32_t first = 0;  // its records: AttrHistory::records()[first, next state's first)
  int64_t start = 0;   // time of the first record with this value
};
static_assert(sizeof(AttrState) == 24, "a state is a value, an index and a time");

// One attribute of a variable over time. Its states' records are consecutive runs of one array, not an
// array each; attributes that every state record of their variable holds (most of them) share one array.
struct AttrHistory {
  KeyId key = kNoKey;  // the flattened record key, e.g. "attributes.grad"
  std::string name;    // the attribute name, e.g. "grad"
  std::vector<AttrState> states;
  int64_t last_end = 0;  // when the last state ends: the trace end

  // The record indices holding the attribute, in time order.
  const std::vector<uint32_t>& records() const { return *records_; }
  // The record indices holding state `s`'s value, in time order.
  std::span<const uint32_t> records_of(uint32_t s) const {
    const uint32_t first = states[s].first;
    const uint32_t next = s + 1 < states.size() ? states[s + 1].first : static_cast<uint32_t>(records_->size());
    return {records_->data() + first, next - first};
  }
  // When state `s` ends: the next state's start, or the trace end.
  int64_t end_of(uint32_t s) const { return s + 1 < states.size() ? states[s + 1].start : last_end; }

 private:
  friend class TraceStore;
  std::shared_ptr<std::vector<uint32_t>> records_ = std::make_shared<std::vector<uint32_t>>();
};

struct VarInstance {
  int64_t process_id = 0;
  std::string_view var_name;
  std::string_view var_type;
  std::vector<AttrHistory> attrs;
  const AttrHistory* attr(std::string_view name) const;
};

// 12 bytes, one per state after an attribute's first; its time is the new state's start
// (TraceStore::time_of).
struct VarChange {
  uint32_t var = 0;        // index into var_instances()
  uint32_t attr = 0;       // index into VarInstance::attrs
  uint32_t new_state = 0;  // the old state is new_state - 1
};

struct ThreadInfo {
  int64_t process_id = 0;
  int64_t thread_id = 0;
  std::vector<uint32_t> calls;    // call indices, by start time
  std::vector<uint32_t> records;  // record indices, by time
};

// Records the trace lacks at one place of one thread's file (RawTrace::lost), placed among the store's
// records. What they would have told is unknown, so checks leave out what spans them: every call open on
// that thread at that point (relations/replay_check.h; docs/formats.md §Damaged and incomplete traces).
struct TraceGap {
  int64_t process_id = 0, thread_id = 0;  // the thread whose file lacks them
  uint32_t after = kNone;                 // the store index of that file's last record before them; kNone: none
  uint32_t file = 0;                      // files() index
  uint64_t line = 0;                      // the damaged line, or the line the lost ones would have preceded
  uint64_t records = 0;
};

struct ContextManagerSpan {
  std::string name;  // the manager class, e.g. "torch.amp.autocast_mode.autocast"
  int64_t process_id = 0, thread_id = 0;
  int64_t start = 0, end = 0;  // __enter__ post .. __exit__ pre
  Value args;                  // {param: value} from __init__, defaults included, payloads unwrapped
};

class TraceStore {
 public:
  TraceStore(std::string name, RawTrace raw, ApiSignatures signatures = {}, std::ostream* warnings = nullptr);
  TraceStore(TraceStore&&) = default;

  // Reads a trace folder (and its api_signatures.json) or a list of files combined into one trace.
  static TraceStore load_folder(const std::string& folder, const ReadOptions& options = {});
  static TraceStore load_files(const std::vector<std::string>& files, const ReadOptions& options = {});

  const std::string& name() const { return name_; }
  const std::vector<std::string>& files() const { return files_; }
  uint64_t bytes() const { return bytes_; }
  const ApiSignatures& signatures() const { return signatures_; }

  const std::vector<Record>& records() const { return records_; }
  const Record& record(uint32_t i) const {
    TC_ASSERT(i < records_.size(), "a record index of this trace");
    return records_[i];
  }
  int64_t start_time() const { return start_time_; }
  int64_t end_time() const { return end_time_; }
  const std::vector<std::string>& stages() const { return stages_; }  // sorted, distinct

  // Lost records (damaged lines, lines the recorder could not write): the placed ones, by `after`; and
  // how many records were lost in all, placed or not, and the files that lack them.
  const std::vector<TraceGap>& gaps() const { return gaps_; }
  uint64_t records_lost() const { return records_lost_; }
  const std::vector<std::string>& files_with_lost_records() const { return files_with_lost_records_; }

  // Calls.
  const std::vector<CallEvent>& calls() const { return calls_; }
  // O(calls): for tests and tools, not for analysis loops.
  const CallEvent* find_call(std::string_view func_call_id) const;
  std::string_view function_of(const CallEvent& call) const { return records_[call.pre].function; }
  int64_t process_of(const CallEvent& call) const { return threads_[call.thread].process_id; }
  int64_t thread_id_of(const CallEvent& call) const { return threads_[call.thread].thread_id; }
  std::span<const uint32_t> calls_of(std::string_view function) const;
  const std::vector<std::string_view>& functions() const { return functions_; }  // sorted
  const std::vector<ThreadInfo>& threads() const { return threads_; }
  uint32_t thread_index(int64_t pid, int64_t tid) const;  // kNone if unknown

  // Calls on the same thread strictly inside (call.start, call.end), at any depth; incomplete calls
  // excluded. Ordered by start time.
  std::vector<uint32_t> contained_calls(const CallEvent& call) const;
  // Var changes in the call's process with time in [call.start, call.end].
  std::span<const VarChange> contained_var_changes(const CallEvent& call) const;

  // Variables.
  const std::vector<VarInstance>& var_instances() const { return vars_; }
  const VarInstance& var(const VarChange& c) const {
    TC_ASSERT(c.var < vars_.size(), "a var change of this trace");
    return vars_[c.var];
  }
  // A change has a state before it: states[new_state - 1] is valid.
  const AttrHistory& attr(const VarChange& c) const {
    TC_ASSERT(c.attr < var(c).attrs.size(), "a var change of a tracked attribute");
    const AttrHistory& a = var(c).attrs[c.attr];
    TC_ASSERT(c.new_state > 0 && c.new_state < a.states.size(), "a var change lies between two states");
    return a;
  }
  // When the change happens: its new state's start.
  int64_t time_of(const VarChange& c) const { return vars_[c.var].attrs[c.attr].states[c.new_state].start; }

  // Context managers active on (pid, tid) at `time`, as fields "meta_vars.context_managers.<X>" ->
  // {arg: value}, sorted by key, one per manager (of nested spans of one manager, the innermost): what the
  // original injects into example records (docs/analysis.md §Trace model).
  std::vector<Field> context_managers_at(int64_t time, int64_t pid, int64_t tid) const;
  const std::vector<ContextManagerSpan>& context_manager_spans() const { return cm_spans_; }

 private:
  void place_lost_records(const std::vector<LostRecords>& lost);
  void index_calls(std::ostream& warn);
  void index_vars();
  void index_context_managers();

  std::string name_;
  std::vector<std::string> files_;
  uint64_t bytes_ = 0;
  ApiSignatures signatures_;
  std::vector<Record> records_;
  int64_t start_time_ = 0, end_time_ = 0;
  std::vector<std::string> stages_;
  std::vector<TraceGap> gaps_;
  uint64_t records_lost_ = 0;
  std::vector<std::string> files_with_lost_records_;

  std::vector<CallEvent> calls_;
  std::unordered_map<std::string_view, std::vector<uint32_t>> calls_by_function_;
  std::vector<std::string_view> functions_;
  std::vector<ThreadInfo> threads_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> thread_by_id_;

  std::vector<VarInstance> vars_;
  std::unordered_map<int64_t, std::vector<VarChange>> changes_by_process_;

  std::vector<ContextManagerSpan> cm_spans_;
  std::vector<std::vector<uint32_t>> cm_spans_by_thread_;  // per thread index
};

// The field prefix of a context manager entered around a record: "meta_vars.context_managers.<X>".
inline constexpr std::string_view kContextManagerFieldPrefix = "meta_vars.context_managers.";

// A context manager's __init__ arguments as preconditions see them ({param: value}, defaults included,
// scalar payloads unwrapped): the value of "meta_vars.context_managers.<X>" while it is entered.
Value context_manager_arguments(const Record& init_pre, const ApiSignatures& signatures);

}  // namespace traincheck
