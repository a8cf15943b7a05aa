#include "trace/trace_store.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include "common/console_text.h"
#include "trace/lost_records.h"

namespace traincheck {

namespace {

// A stable sort by time that never holds a second array of records (std::stable_sort's buffer would be
// as large as the records themselves): indices are sorted, then the records permuted in place.
void sort_records_by_time(std::vector<Record>& records) {
  auto by_time = [](const Record& a, const Record& b) { return a.time < b.time; };
  if (std::is_sorted(records.begin(), records.end(), by_time)) return;
  std::vector<uint32_t> order(records.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return records[a].time < records[b].time; });
  // Position i receives records[order[i]]: follow each cycle once, marking done slots with kNone.
  for (uint32_t start = 0; start < order.size(); ++start) {
    if (order[start] == kNone || order[start] == start) continue;
    Record held = std::move(records[start]);
    uint32_t at = start;
    while (order[at] != start) {
      const uint32_t from = order[at];
      records[at] = std::move(records[from]);
      order[at] = kNone;
      at = from;
    }
    records[at] = std::move(held);
    order[at] = kNone;
  }
}

}  // namespace

TraceStore::TraceStore(std::string name, RawTrace raw, ApiSignatures signatures, std::ostream* warnings)
    : name_(std::move(name)),
      files_(std::move(raw.files)),
      bytes_(raw.bytes),
      signatures_(std::move(signatures)),
      records_(std::move(raw.records)) {
  std::ostream& warn = warnings ? *warnings : std::cerr;
  // Gaps are placed after the record before them in their file: found while records are in file order,
  // then followed through the sort by the record's time and place.
  struct Anchor {
    int64_t time;
    uint32_t file, line;
  };
  std::vector<Anchor> anchors;
  for (const LostRecords& lost : raw.lost) {
    records_lost_ += lost.records;
    if (lost.placed && (files_with_lost_records_.empty() || files_with_lost_records_.back() != files_[lost.file]))
      files_with_lost_records_.push_back(files_[lost.file]);
    if (!lost.placed) continue;
    auto before = [&](const Record& r) { return r.file < lost.file || (r.file == lost.file && r.line < lost.line); };
    const auto next = std::partition_point(records_.begin(), records_.end(), before);
    TraceGap gap;
    gap.file = lost.file;
    gap.line = lost.line;
    gap.records = lost.records;
    const Record* neighbour = nullptr;
    Anchor anchor{0, kNone, 0};  // none: nothing of its file before it, so nothing open to leave out
    if (next != records_.begin() && std::prev(next)->file == lost.file) {
      neighbour = &*std::prev(next);
      anchor = Anchor{neighbour->time, neighbour->file, neighbour->line};
    } else if (next != records_.end() && next->file == lost.file) {
      neighbour = &*next;
    }
    if (neighbour == nullptr) continue;  // a file without a valid record: nothing of it is checked
    gap.process_id = neighbour->process_id;
    gap.thread_id = neighbour->thread_id;
    gaps_.push_back(gap);
    anchors.push_back(anchor);
  }
  // Each file is time-ordered already (docs/formats.md §Reading traces); a stable sort merges them and keeps
  // file order for equal times, as the original's concatenation does.
  sort_records_by_time(records_);
  for (size_t g = 0; g < gaps_.size(); ++g) {
    const Anchor& a = anchors[g];
    if (a.file == kNone) continue;
    auto it = std::lower_bound(records_.begin(), records_.end(), a.time, [](const Record& r, int64_t t) { return r.time < t; });
    for (; it != records_.end() && it->time == a.time; ++it)
      if (it->file == a.file && it->line == a.line) gaps_[g].after = static_cast<uint32_t>(it - records_.begin());
  }
  std::stable_sort(gaps_.begin(), gaps_.end(), [](const TraceGap& a, const TraceGap& b) {
    return (a.after == kNone ? -1 : int64_t{a.after}) < (b.after == kNone ? -1 : int64_t{b.after});
  });
  if (records_lost_) warn << "warning: trace '" << console_text(name_) << "': " << incomplete_trace_line(records_lost_, files_with_lost_records_) << "\n";
  TC_ASSERT(std::is_sorted(records_.begin(), records_.end(), [](const Record& a, const Record& b) { return a.time < b.time; }),
            "records are in time order after the in-place permutation");
  if (!records_.empty()) {
    start_time_ = records_.front().time;
    end_time_ = records_.back().time;
  }
  std::set<std::string_view> stages;
  for (const Record& r : records_)
    if (!r.stage.empty()) stages.insert(r.stage);
  stages_.assign(stages.begin(), stages.end());
  index_calls(warn);
  index_vars();
  index_context_managers();
}

TraceStore TraceStore::load_folder(const std::string& folder, const ReadOptions& options) {
  const std::vector<std::string> files = list_trace_files(folder);
  // Nothing to read is a mistake (a wrong path, a run that wrote nothing), never an empty result.
  if (files.empty()) throw TraceReadError(folder, 0, "", "no trace files in this folder (trace_* or proxy_log.json)");
  RawTrace raw = read_trace_files(files, options);
  add_losses(raw, read_recorder_losses(folder, raw.files, options.warnings ? *options.warnings : std::cerr));
  ApiSignatures sigs = ApiSignatures::load((std::filesystem::path(folder) / "api_signatures.json").string());
  // The folder's own name, from its absolute path: `..` or `run/` name the folder they mean.
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(folder, ec).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  std::string name = ec ? std::string() : absolute.filename().string();
  if (name == "." || name == "..") name.clear();
  return TraceStore(name.empty() ? "trace" : name, std::move(raw), std::move(sigs), options.warnings);
}

TraceStore TraceStore::load_files(const std::vector<std::string>& files, const ReadOptions& options) {
  RawTrace raw = read_trace_files(files, options);
  ApiSignatures sigs;
  std::set<std::string> folders;
  for (const auto& f : files) folders.insert(std::filesystem::path(f).parent_path().string());
  for (const auto& d : folders) {
    sigs.merge(ApiSignatures::load((std::filesystem::path(d) / "api_signatures.json").string()));
    add_losses(raw, read_recorder_losses(d.empty() ? "." : d, raw.files, options.warnings ? *options.warnings : std::cerr));
  }
  std::string name = files.empty() ? "trace" : std::filesystem::path(files.front()).parent_path().filename().string();
  if (name.empty()) name = "trace";
  return TraceStore(name, std::move(raw), std::move(sigs), options.warnings);
}

uint32_t TraceStore::thread_index(int64_t pid, int64_t tid) const {
  auto it = thread_by_id_.find({pid, tid});
  return it == thread_by_id_.end() ? kNone : it->second;
}

namespace {

// Calls by func_call_id while pre and post records are paired: (hash, call) sorted, 16 bytes a call
// where a node-based map took about 40, at the moment the whole trace is in memory. Equal hashes are
// told apart by the ids themselves.
class CallIdIndex {
 public:
  void add(std::string_view id, uint32_t call) { entries_.push_back({std::hash<std::string_view>{}(id), call}); }
  void sort() { std::sort(entries_.begin(), entries_.end()); }
  // The first call (lowest index) whose id equals `id`, or kNone.
  template <typename IdOf>
  uint32_t find(std::string_view id, const IdOf& id_of) const {
    const uint64_t h = std::hash<std::string_view>{}(id);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{h, 0});
    for (; it != entries_.end() && it->hash == h; ++it)
      if (id_of(it->call) == id) return it->call;
    return kNone;
  }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t call;
    bool operator<(const Entry& o) const { return hash != o.hash ? hash < o.hash : call < o.call; }
  };
  std::vector<Entry> entries_;
};

}  // namespace

void TraceStore::index_calls(std::ostream& warn) {
  // Threads and their records.
  for (uint32_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    auto [it, inserted] = thread_by_id_.try_emplace({r.process_id, r.thread_id}, static_cast<uint32_t>(threads_.size()));
    if (inserted) threads_.push_back(ThreadInfo{r.process_id, r.thread_id, {}, {}});
    threads_[it->second].records.push_back(i);
  }
  // One call per pre-record, per thread in time order; then the index of their ids.
  CallIdIndex ids;
  for (uint32_t t = 0; t < threads_.size(); ++t) {
    for (uint32_t ri : threads_[t].records) {
      const Record& r = records_[ri];
      if (r.type != RecordType::FunctionPre) continue;
      CallEvent c;
      c.pre = ri;
      c.start = r.time;
      c.thread = t;
      ids.add(r.func_call_id(), static_cast<uint32_t>(calls_.size()));
      calls_.push_back(c);
    }
  }
  ids.sort();
  auto id_of = [&](uint32_t call) { return records_[calls_[call].pre].func_call_id(); };
  // Pair pre and post records per thread with a call stack.
  size_t orphan_posts = 0, lost_posts = 0;
  std::vector<bool> dropped(calls_.size(), false);  // per call
  uint32_t next_call = 0;                           // calls were made in this very order
  for (uint32_t t = 0; t < threads_.size(); ++t) {
    std::vector<uint32_t> stack;
    for (uint32_t ri : threads_[t].records) {
      const Record& r = records_[ri];
      if (!r.is_api()) continue;
      if (r.type == RecordType::FunctionPre) {
        const uint32_t call = next_call++;
        if (ids.find(r.func_call_id(), id_of) != call)
          throw TraceReadError(files_[r.file], r.line, "func_call_id",
                               "more than one pre-record for call '" + std::string(r.func_call_id()) + "'");
        stack.push_back(call);
        continue;
      }
      // Only calls whose pre-record came earlier in this walk pair up (as they did with a map filled
      // while walking): a post before its pre, or on a thread walked before the pre's, is an orphan.
      const uint32_t call = ids.find(r.func_call_id(), id_of);
      if (call == kNone || call >= next_call) {
        ++orphan_posts;  // its pre-record was not traced (or was lost): nothing to pair with
        continue;
      }
      CallEvent& c = calls_[call];
      if (c.post != kNone)
        throw TraceReadError(files_[r.file], r.line, "func_call_id",
                             "more than two records for call '" + std::string(r.func_call_id()) + "'");
      c.post = ri;
      c.end = r.time;
      c.status = r.type == RecordType::FunctionException ? CallStatus::Exception : CallStatus::Complete;
      // Calls above it on the stack never returned although their caller did: their posts were lost.
      auto pos = std::find(stack.rbegin(), stack.rend(), call);
      if (pos != stack.rend()) {
        const size_t keep = static_cast<size_t>(stack.rend() - pos) - 1;
        for (size_t s = keep + 1; s < stack.size(); ++s) {
          dropped[stack[s]] = true;
          ++lost_posts;
        }
        stack.resize(keep);
      }
    }
    // Whatever is still open when the thread's records end was interrupted: kept as Incomplete.
  }
  if (orphan_posts || lost_posts)
    warn << "warning: trace '" << console_text(name_) << "': " << orphan_posts << " post-records without a pre-record and "
         << lost_posts << " calls without a post-record inside a finished caller were ignored\n";
  // Compact away dropped calls.
  if (lost_posts) {
    std::vector<CallEvent> kept;
    kept.reserve(calls_.size());
    for (size_t i = 0; i < calls_.size(); ++i)
      if (!dropped[i]) kept.push_back(calls_[i]);
    calls_ = std::move(kept);
  }
  for (uint32_t i = 0; i < calls_.size(); ++i) {
    CallEvent& c = calls_[i];
    if (c.status == CallStatus::Incomplete) c.end = end_time_;
    TC_ASSERT((c.post == kNone) == (c.status == CallStatus::Incomplete), "a call has a post record unless incomplete");
    TC_ASSERT(c.post == kNone || records_[c.post].func_call_id() == records_[c.pre].func_call_id(),
              "a call's post record is its own (same func_call_id)");
    TC_ASSERT(c.start <= c.end, "a call ends after it starts (records are in time order)");
    calls_by_function_[function_of(c)].push_back(i);
    threads_[c.thread].calls.push_back(i);
  }
  // Calls were created in pre-record time order per thread; per function they interleave threads.
  for (auto& [fn, list] : calls_by_function_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return calls_[a].start < calls_[b].start; });
    functions_.push_back(fn);
  }
  std::sort(functions_.begin(), functions_.end());
}

const CallEvent* TraceStore::find_call(std::string_view id) const {
  for (const CallEvent& c : calls_)
    if (records_[c.pre].func_call_id() == id) return &c;
  return nullptr;
}

std::span<const uint32_t> TraceStore::calls_of(std::string_view function) const {
  auto it = calls_by_function_.find(function);
  if (it == calls_by_function_.end()) return {};
  return it->second;
}

std::vector<uint32_t> TraceStore::contained_calls(const CallEvent& call) const {
  std::vector<uint32_t> out;
  const std::vector<uint32_t>& list = threads_[call.thread].calls;
  auto it = std::upper_bound(list.begin(), list.end(), call.start,
                             [&](int64_t t, uint32_t c) { return t < calls_[c].start; });
  for (; it != list.end() && calls_[*it].start < call.end; ++it) {
    const CallEvent& inner = calls_[*it];
    if (inner.status != CallStatus::Incomplete && inner.end < call.end) out.push_back(*it);
  }
  return out;
}

std::span<const VarChange> TraceStore::contained_var_changes(const CallEvent& call) const {
  auto it = changes_by_process_.find(process_of(call));
  if (it == changes_by_process_.end()) return {};
  const std::vector<VarChange>& list = it->second;
  auto lo = std::lower_bound(list.begin(), list.end(), call.start,
                             [&](const VarChange& c, int64_t t) { return time_of(c) < t; });
  auto hi = std::upper_bound(lo, list.end(), call.end, [&](int64_t t, const VarChange& c) { return t < time_of(c); });
  return std::span<const VarChange>(list.data() + (lo - list.begin()), static_cast<size_t>(hi - lo));
}

}  // namespace traincheck
