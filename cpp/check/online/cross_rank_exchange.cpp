#include "check/online/cross_rank_exchange.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "trace/value.h"

namespace traincheck {

namespace {

// What identifies a step end and its rank, whatever the checks read (trace/var_state.h, the step and
// stage of meta_vars, and the rank the collector records under torch.distributed).
constexpr const char* kIdentityFields[] = {"type",     "process_id", "thread_id",       "time",
                                           "var_name", "var_type",   "meta_vars.step", "meta_vars.stage",
                                           "meta_vars._DATA_PARALLEL_RANK"};
// Consecutive failed store calls after which the exchange stops (the store went away: the job's process
// group was destroyed, or the rank that served it exited).
constexpr int kMaxConsecutiveErrors = 3;

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

std::string key_of(int64_t step, int rank) { return "s" + std::to_string(step) + "/r" + std::to_string(rank); }
std::string chunk_key(int64_t step, int rank, size_t chunk) { return key_of(step, rank) + "/c" + std::to_string(chunk); }

// A rank's latest published step: tells a rank waiting for a step whether the peer has not reached it
// yet or has already deleted it (the waiting rank is the slow one).
std::string latest_key(int rank) { return "latest/r" + std::to_string(rank); }

}  // namespace

std::optional<PeerWindow> parse_peer_window(const std::string& value, int64_t keep_steps) {
  // "<latest> <oldest>"; a lone number is a latest step, with keep_steps kept before it.
  const char* p = value.c_str();
  char* end = nullptr;
  errno = 0;
  const long long latest = std::strtoll(p, &end, 10);
  if (end == p || errno == ERANGE) return std::nullopt;
  PeerWindow w{latest, 0};
  p = end;
  while (*p == ' ') ++p;
  if (*p == '\0') {
    w.oldest = latest > std::numeric_limits<int64_t>::min() + keep_steps ? latest - keep_steps + 1 : latest;
    return w;
  }
  const long long oldest = std::strtoll(p, &end, 10);
  if (end == p || errno == ERANGE || *end != '\0') return std::nullopt;
  w.oldest = std::min<int64_t>(oldest, latest);  // the window never reaches past its latest step
  return w;
}

namespace {

// What a summary keeps of a record: its identity, then the fields the checks read.
std::vector<KeyId> kept_keys(const std::set<std::string>& fields) {
  std::vector<KeyId> kept;
  for (const char* f : kIdentityFields) kept.push_back(intern_key(f));
  for (const std::string& f : fields) kept.push_back(intern_key(f));
  return kept;
}

// A step key's first line: "<chunks>", or "<chunks> <digest> <process id>" with match_by_digest.
struct StepHeader {
  size_t chunks = 0;
  std::optional<uint64_t> digest;
  int64_t process_id = 0;
};

// A summary in more chunks than this is no summary of ours (4 GiB): its chunks are not fetched one store
// call each for ever.
constexpr size_t kMaxChunks = 4096;

std::optional<StepHeader> parse_step_header(std::string_view line) {
  const std::string text(line);
  const char* p = text.c_str();
  if (!std::isdigit(static_cast<unsigned char>(*p))) return std::nullopt;  // strtoull takes " -1" as 2^64 - 1
  char* end = nullptr;
  errno = 0;
  StepHeader h;
  h.chunks = static_cast<size_t>(std::strtoull(p, &end, 10));
  if (end == p || errno == ERANGE || h.chunks > kMaxChunks) return std::nullopt;
  if (*end == '\0') return h;
  p = end;
  const uint64_t digest = std::strtoull(p, &end, 16);
  if (end == p || errno == ERANGE) return h;  // no digest: fetched as before
  p = end;
  const long long pid = std::strtoll(p, &end, 10);
  if (end == p || errno == ERANGE || *end != '\0') return h;
  h.digest = digest;
  h.process_id = pid;
  return h;
}

}  // namespace

CrossRankExchange::CrossRankExchange(std::unique_ptr<PeerStore> store, CrossRankOptions options, std::set<std::string> fields)
    : options_(options),
      job_store_(std::make_unique<CountingPeerStore>(std::move(store))),
      encoder_(kept_keys(fields)),
      digester_(kept_keys(fields)) {
  io_ = std::thread([this] { io_loop(); });
}

CrossRankExchange::~CrossRankExchange() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    stopped_at_ = std::chrono::steady_clock::now();
    outbox_.clear();
  }
  wake_.notify_all();
  if (io_.joinable()) io_.join();
}

// ---- writer side ------------------------------------------------------------------------------------

void CrossRankExchange::observe(const Record& r) {
  if (!r.has_step) return;
  if (next_to_publish_ && r.step < *next_to_publish_) {  // a step already published
    // Its summary and digest lack this record, which this rank's check takes as the step's end: a peer's
    // step is no longer known equal by digest, and is fetched.
    if (options_.match_by_digest) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (late_steps_.insert(r.step).second && late_steps_.size() > kMaxLateSteps) late_steps_.erase(late_steps_.begin());
    }
    return;
  }
  process_id_ = r.process_id;
  const std::optional<SharedFieldsMemo<SharedSummary>::Derived> shared = shared_summary(r);
  uint64_t digest = 0;
  if (options_.match_by_digest && !shared) digest = digester_.of(r);
  if (options_.match_by_digest && shared) {
    digest = shared->value.digest;  // its own fields' added: the sum over all of them (StepDigester::of)
    for (const Field& f : r.fields) digest += digester_.field_digest(f);
  }
  auto [it, added] = steps_.try_emplace(r.step);
  StepStates& step = it->second;
  if (added) {
    // Room for as much as the step before had: a model's step is tens of megabytes of frames, and
    // growing to that size copies them several times over. The key frame leads, as published.
    step.ids.reserve(last_step_variables_);
    step.last.reserve(last_step_variables_);
    step.digests.reserve(last_step_variables_);
    {
      // A buffer the I/O thread has published from, its pages already touched: a fresh one of a model's
      // size is page-faulted in afresh every step.
      std::lock_guard<std::mutex> lock(mutex_);
      if (!spare_frames_.empty()) {
        step.frames.swap(spare_frames_.back());
        spare_frames_.pop_back();
      }
    }
    step.frames.reserve(last_step_bytes_);
    step.frames = encoder_.key_frame();
  }
  const uint64_t id = static_cast<uint64_t>(r.var_type.id()) << 32 | r.var_name.id();
  const size_t offset = step.frames.size();
  if (!shared) encoder_.append_record(step.frames, r);
  else encoder_.append_frame(step.frames, r.fields.data(), r.fields.data() + r.fields.size(), shared->bytes, shared->value.count);
  const std::pair<size_t, size_t> frame{offset, step.frames.size() - offset};
  // A step's variables come in the order of the step before: while each is the one at its place in that
  // order, it is new in the step (the order's variables are distinct), and nothing is looked up. The
  // first that is not (a new variable, one observed again in the step) indexes the step's variables.
  const size_t n = step.ids.size();
  if (step.in_order && !(n < order_.size() && order_[n] == id)) {
    step.in_order = false;
    step.position.reserve(std::max(last_step_variables_, n + 1));
    for (size_t i = 0; i < n; ++i) step.position.insert(mix_key(step.ids[i]), static_cast<uint32_t>(i));
  }
  uint32_t* at = step.in_order ? nullptr : step.position.find(mix_key(id), [&](uint32_t i) { return step.ids[i] == id; });
  if (at != nullptr) {
    step.stale_bytes += step.last[*at].second;
    step.last[*at] = frame;
    step.digests[*at] = digest;
    // A step that lasts (gradient accumulation, a tracker writing many times in a step) would keep every
    // record it saw: its last ones only, once the stale ones outweigh them.
    if (2 * step.stale_bytes > step.frames.size()) compact(step);
  } else {
    if (!step.in_order) step.position.insert(mix_key(id), static_cast<uint32_t>(n));
    step.ids.push_back(id);
    step.last.push_back(frame);
    step.digests.push_back(digest);
  }
}

std::optional<SharedFieldsMemo<CrossRankExchange::SharedSummary>::Derived> CrossRankExchange::shared_summary(const Record& r) {
  if (!r.shared_fields_common || !r.shared_fields.is_object()) return std::nullopt;  // none shadowed (Record)
  return shared_summaries_.find(r.shared_fields, [&](const Value& fields, std::string& frame_fields) {
    const Object& o = fields.as_object();
    SharedSummary summary;
    summary.count = encoder_.append_fields(frame_fields, o.data(), o.data() + o.size());
    if (options_.match_by_digest)
      for (const Member& m : o) summary.digest += digester_.field_digest(m);
    return summary;
  });
}

void CrossRankExchange::compact(StepStates& step) const {
  std::string live;
  live.reserve(step.frames.size() - step.stale_bytes);
  live = encoder_.key_frame();
  for (auto& [offset, size] : step.last) {
    const size_t moved = live.size();
    live.append(step.frames, offset, size);
    offset = moved;
  }
  step.frames.swap(live);
  step.stale_bytes = 0;
}

uint64_t CrossRankExchange::digest_of(const std::vector<Record>& records) const {
  std::vector<uint64_t> variables;
  for (const Record& r : records) variables.push_back(digester_.of(r));
  return StepDigester::combine(variables);
}

std::string CrossRankExchange::summary_of(const std::vector<Record>& records) const {
  std::string summary = encoder_.key_frame();
  for (const Record& r : records) encoder_.append_record(summary, r);
  return summary;
}

size_t CrossRankExchange::pending_bytes() const {
  size_t n = 0;
  for (const auto& [step, states] : steps_) n += states.frames.size();
  return n;
}

bool CrossRankExchange::read_summary(std::string_view summary, std::vector<Record>& out, std::string& error) {
  return decoder_.decode(summary, out, error);
}

void CrossRankExchange::hand_over_ended(int64_t last_ended) {
  if (!next_to_publish_) next_to_publish_ = steps_.empty() ? last_ended + 1 : std::min(steps_.begin()->first, last_ended + 1);
  if (last_ended < *next_to_publish_) return;
  // Many steps at once (a fast loop, the store came late, a long pause): the newest ones, as many as
  // the window holds (peers cannot compare older ones).
  std::vector<Outgoing> ended;
  size_t bytes = 0;
  static const std::vector<uint64_t> kNoVariables;
  for (int64_t s = last_ended; s >= *next_to_publish_; --s) {
    std::string text;
    const std::vector<uint64_t>* digests = &kNoVariables;
    if (auto it = steps_.find(s); it != steps_.end()) {
      StepStates& step = it->second;
      if (step.stale_bytes > 0) compact(step);  // each variable's last frame, in the order they first appeared
      if (s == last_ended) {
        last_step_variables_ = step.ids.size();
        last_step_bytes_ = step.frames.size();
        order_.swap(step.ids);
      }
      text = std::move(step.frames);  // the key frame, then the frames
      digests = &step.digests;
    } else {
      text = encoder_.key_frame();
    }
    bytes += text.size();
    if (beyond_window(ended.size() + 1, bytes)) break;
    const uint64_t digest = options_.match_by_digest ? StepDigester::combine(*digests) : 0;
    ended.push_back(Outgoing{s, std::move(text), digest, process_id_});
  }
  std::reverse(ended.begin(), ended.end());
  steps_.erase(steps_.begin(), steps_.upper_bound(last_ended));
  next_to_publish_ = last_ended + 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& e : ended) outbox_.push_back(std::move(e));
  }
  wake_.notify_all();
}

std::vector<Record> CrossRankExchange::take_received() {
  std::vector<Received> got;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    got.swap(inbox_);
  }
  std::stable_sort(got.begin(), got.end(), [](const Received& a, const Received& b) { return std::tie(a.step, a.rank) < std::tie(b.step, b.rank); });
  std::vector<Record> records;
  std::string error;
  for (const Received& summary : got)
    if (summary.matched_process) {
      matched_.push_back(MatchedPeerStep{summary.step, summary.rank, *summary.matched_process});
    } else if (!decoder_.decode(summary.text, records, error)) {  // its records before the bad one are kept
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.store_errors;
      stats_.last_error = "rank " + std::to_string(summary.rank) + ", step " + std::to_string(summary.step) + ": " + error;
    }
  return records;
}

std::vector<MatchedPeerStep> CrossRankExchange::take_matched() {
  std::vector<MatchedPeerStep> out;
  out.swap(matched_);
  return out;
}

std::vector<Record> CrossRankExchange::exchange(std::optional<int64_t> current_step) {
  if (current_step) hand_over_ended(*current_step - 1);
  return take_received();
}

std::vector<Record> CrossRankExchange::finish() {
  if (!steps_.empty() || next_to_publish_) {
    const int64_t last = steps_.empty() ? *next_to_publish_ - 1 : steps_.rbegin()->first;
    hand_over_ended(last);
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    stopped_at_ = std::chrono::steady_clock::now();
    wake_.notify_all();
    drained_.wait_for(lock, std::chrono::milliseconds(options_.final_wait_ms + 1000), [&] { return done_; });
  }
  if (io_.joinable()) {
    bool done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done = done_;
    }
    // A thread stuck in the store (it never returns on its own) is left behind rather than waited for.
    done ? io_.join() : io_.detach();
  }
  return take_received();
}

CrossRankStats CrossRankExchange::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CrossRankStats st = stats_;
  st.job_store_calls = job_store_->calls();
  st.job_store_bytes = job_store_->bytes();
  return st;
}

// ---- the I/O thread ---------------------------------------------------------------------------------

void CrossRankExchange::note_error(const std::exception& e) {
  ++stats_.store_errors;
  stats_.last_error = e.what();
  if (++consecutive_errors_ < kMaxConsecutiveErrors || disabled_) return;
  disabled_ = true;
  if (!stopping_)  // at the end of a run the store going away first is normal
    std::fprintf(stderr, "traincheck: cross-rank check off in process rank %d: the store failed %d times (%s)\n",
                 stats_.group ? stats_.group->rank : -1, kMaxConsecutiveErrors, e.what());
}

void CrossRankExchange::publish(std::unique_lock<std::mutex>& lock) {
  // This rank's number in the store its summaries go to (per node: its local rank, in the node's).
  const int rank = plan_.mode == CrossRankMode::PerNode ? plan_.local_rank : stats_.group->rank;
  while (!outbox_.empty() && !disabled_) {
    auto [step, text, digest, process_id] = std::move(outbox_.front());
    outbox_.pop_front();
    for (int peer : plan_.peers) cursor_.try_emplace(peer, step);  // peers are wanted from our first step on
    const size_t bytes = text.size();
    std::vector<OwnKey> expired;
    while (!own_keys_.empty() && beyond_window(own_keys_.size() + 1, own_bytes_ + bytes)) {
      expired.push_back(own_keys_.front());
      own_bytes_ -= own_keys_.front().bytes;
      own_keys_.pop_front();
    }
    const int64_t oldest_kept = own_keys_.empty() ? step : own_keys_.front().step;
    // The step key holds the number of chunks, then the summary itself when it is small.
    uint64_t too_large = 0;
    std::vector<std::string> chunks;
    if (text.size() > kInlineSummaryBytes) chunks = chunk_record_frames(text, kMaxStoreValueBytes, too_large);
    stats_.lines_too_large += too_large;
    std::string header = std::to_string(chunks.size());
    if (options_.match_by_digest) {
      char hex[24];
      std::snprintf(hex, sizeof hex, " %llx", static_cast<unsigned long long>(digest));
      header += hex + (" " + std::to_string(process_id));
    }
    const std::string step_value = header + "\n" + (chunks.empty() ? text : std::string());
    const bool trusted = !late_steps_.count(step);  // the fold's: as plan_fetch's own digest
    lock.unlock();
    uint64_t ops = 0;
    bool published = false;
    try {
      // Chunks first: a peer that sees the step key finds them all.
      for (size_t i = 0; i < chunks.size(); ++i) {
        store_->multi_set({chunk_key(step, rank, i)}, {chunks[i]});
        ++ops;
      }
      store_->multi_set({key_of(step, rank), latest_key(rank)},
                        {step_value, std::to_string(step) + " " + std::to_string(oldest_kept)});
      ++ops;
      for (const OwnKey& old : expired) {
        store_->erase(key_of(old.step, rank));
        ++ops;
        for (size_t i = 0; i < old.chunks; ++i, ++ops) store_->erase(chunk_key(old.step, rank, i));
      }
      lock.lock();
      consecutive_errors_ = 0;
      own_keys_.push_back(OwnKey{step, chunks.size(), bytes, digest});
      own_bytes_ += bytes;
      last_published_ = step;
      ++stats_.steps_published;
      stats_.chunks_published += chunks.size();
      stats_.bytes_published += bytes;
      published = true;
    } catch (const std::exception& e) {
      lock.lock();
      note_error(e);
    }
    stats_.store_ops += ops;
    if (published && fold_) {
      lock.unlock();
      std::optional<std::string> failure;
      try {
        fold_->publish(step, digest, process_id, text, trusted);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      lock.lock();
      stats_.folds = fold_->stats();
      if (failure) note_error(std::runtime_error(*failure));
    }
    if (spare_frames_.size() < kSpareFrameBuffers) {
      text.clear();
      spare_frames_.push_back(std::move(text));
    }
  }
}

std::string CrossRankExchange::assemble(const std::string& value, int64_t step, int peer, uint64_t& ops, uint64_t& missing,
                                        std::optional<uint64_t> own_digest, std::optional<int64_t>& matched_process) {
  const size_t eol = value.find('\n');
  if (eol == std::string::npos) return {};
  const std::optional<StepHeader> header = parse_step_header(std::string_view(value).substr(0, eol));
  if (!header) return {};
  if (options_.match_by_digest && own_digest && header->digest == own_digest) {
    matched_process = header->process_id;
    return {};
  }
  const size_t chunks = header->chunks;
  if (chunks == 0) return value.substr(eol + 1);
  std::string text;
  for (size_t i = 0; i < chunks; ++i) {
    const std::string key = chunk_key(step, peer, i);
    ++ops;
    if (!store_->check({key})) {  // deleted meanwhile (the peer is keep_steps ahead): never waited for
      ++missing;
      continue;
    }
    ++ops;
    text += store_->multi_get({key}).at(0);
  }
  return text;
}

bool CrossRankExchange::beyond_window(size_t steps, size_t bytes) const {
  return steps > static_cast<size_t>(options_.keep_steps) && bytes > options_.keep_bytes;
}

void CrossRankExchange::skip_lagging_peers() {
  // The oldest step still compared: this rank's oldest summary in the store.
  const int64_t oldest = own_keys_.empty() ? *last_published_ - options_.keep_steps + 1 : own_keys_.front().step;
  for (auto& [peer, next] : cursor_) {
    if (next >= oldest) continue;
    stats_.steps_skipped += static_cast<uint64_t>(oldest) - static_cast<uint64_t>(next);
    if (stats_.lagging.insert(global_rank(peer)).second)
      std::fprintf(stderr,
                   "traincheck: cross-rank check (rank %d): rank %d has not published step %lld, and this rank has ended "
                   "step %lld: it lags or has stopped; its steps are compared again from those it publishes within this "
                   "rank's last %lld steps (traincheck-check compares them all after the run)\n",
                   stats_.group->rank, global_rank(peer), static_cast<long long>(next), static_cast<long long>(*last_published_),
                   static_cast<long long>(*last_published_ - oldest + 1));
    next = oldest;
  }
}

void CrossRankExchange::report_missing_at_end() {
  // A window of hundreds of steps (a small model) may hold the whole run: a peer that stopped early is
  // reported here if it was not before, when more than keep_steps behind: the last steps of a peer
  // that exits as this rank does often never arrive (its store may go first), and that is no lag.
  if (!last_published_) return;
  for (auto& [peer, next] : cursor_) {
    if (next > *last_published_ - options_.keep_steps || stats_.lagging.count(global_rank(peer))) continue;
    stats_.steps_skipped += static_cast<uint64_t>(*last_published_) - static_cast<uint64_t>(next) + 1;
    stats_.lagging.insert(global_rank(peer));
    std::fprintf(stderr,
                 "traincheck: cross-rank check (rank %d): rank %d has not published step %lld by the end of the run, and "
                 "this rank has ended step %lld: it lags or has stopped (traincheck-check compares what it wrote after "
                 "the run)\n",
                 stats_.group->rank, global_rank(peer), static_cast<long long>(next), static_cast<long long>(*last_published_));
    next = *last_published_ + 1;
  }
}

void CrossRankExchange::fetch(std::unique_lock<std::mutex>& lock) {
  constexpr int kStepsPerRound = 4;  // bounds one round's store calls when catching up
  std::set<int> waiting;
  for (int round = 0; round < kStepsPerRound; ++round) {
    const std::optional<FetchRound> next = plan_fetch(waiting);
    if (!next) break;
    lock.unlock();
    Fetched fetched = query_store(*next);
    lock.lock();
    if (!take_fetched(*next, fetched, waiting)) {
      if (fetched.failure) return;
      // In lockstep, the peers' latest step is not all there yet: the rest next poll. Behind, the peers
      // that had not published the step wait, and the others' later steps are asked for.
      if (!next->behind) break;
    }
  }
  skip_lagging_peers();
}

std::optional<CrossRankExchange::FetchRound> CrossRankExchange::plan_fetch(const std::set<int>& waiting) const {
  if (!last_published_ || disabled_ || cursor_.empty()) return std::nullopt;
  FetchRound r;
  std::optional<int64_t> lowest;
  for (const auto& [peer, next] : cursor_)
    if (!waiting.count(peer)) lowest = std::min(lowest.value_or(next), next);
  if (!lowest) return std::nullopt;
  r.step = *lowest;
  if (r.step > *last_published_) return std::nullopt;  // every peer's summaries of our ended steps are in
  // Waiting for a step we ended earlier than just now: the peers that have not published it are asked
  // one by one, with their latest step (they may lag, or have deleted it while we lagged).
  r.behind = r.step < *last_published_;
  for (const auto& [peer, next] : cursor_)
    if (next == r.step && !waiting.count(peer)) {
      r.wanted.push_back(peer);
      r.keys.push_back(key_of(r.step, peer));
    }
  for (const OwnKey& k : own_keys_)
    if (k.step == r.step && !late_steps_.count(r.step)) r.own_digest = k.digest;
  return r;
}

CrossRankExchange::Fetched CrossRankExchange::query_store(const FetchRound& r) {
  Fetched f;
  try {
    f.all = store_->check(r.keys);
    ++f.ops;
    if (f.all) {
      // Step keys hold at most kInlineSummaryBytes each: a batch of them stays within one value's bound.
      constexpr size_t kBatch = kMaxStoreValueBytes / kInlineSummaryBytes;
      for (size_t from = 0; from < r.keys.size(); from += kBatch) {
        const std::vector<std::string> batch(r.keys.begin() + static_cast<std::ptrdiff_t>(from),
                                             r.keys.begin() + static_cast<std::ptrdiff_t>(std::min(r.keys.size(), from + kBatch)));
        std::vector<std::string> values = store_->multi_get(batch);
        ++f.ops;
        for (size_t i = 0; i < batch.size() && i < values.size(); ++i) {
          Fetched::Got& g = f.got.emplace_back(Fetched::Got{r.wanted[from + i], {}, std::nullopt});
          g.text = assemble(values[i], r.step, g.peer, f.ops, f.missing, r.own_digest, g.matched_process);
        }
      }
    } else if (r.behind) {
      for (size_t i = 0; i < r.wanted.size(); ++i) {
        f.ops += 2;
        if (store_->check({r.keys[i]})) {
          Fetched::Got& g = f.got.emplace_back(Fetched::Got{r.wanted[i], {}, std::nullopt});
          g.text = assemble(store_->multi_get({r.keys[i]}).at(0), r.step, g.peer, f.ops, f.missing, r.own_digest,
                            g.matched_process);
        } else if (store_->check({latest_key(r.wanted[i])})) {
          ++f.ops;
          f.latest.emplace_back(r.wanted[i], store_->multi_get({latest_key(r.wanted[i])}).at(0));
        }
      }
    }
  } catch (const std::exception& e) {
    f.failure = e.what();
  }
  return f;
}

bool CrossRankExchange::take_fetched(const FetchRound& r, Fetched& f, std::set<int>& waiting) {
  stats_.store_ops += f.ops;
  stats_.chunks_missing += f.missing;
  if (f.failure) {
    note_error(std::runtime_error(*f.failure));
    return false;
  }
  consecutive_errors_ = 0;
  for (auto& [peer, text, matched_process] : f.got) {
    if (stats_.lagging.erase(global_rank(peer)))
      std::fprintf(stderr, "traincheck: cross-rank check (rank %d): rank %d publishes again (step %lld)\n", stats_.group->rank,
                   global_rank(peer), static_cast<long long>(r.step));
    ++stats_.summaries_received;
    if (matched_process) ++stats_.summaries_matched;
    else stats_.records_received += count_record_frames(text);
    inbox_.push_back(Received{r.step, global_rank(peer), std::move(text), matched_process});
    cursor_[peer] = r.step + 1;
  }
  for (const auto& [peer, value] : f.latest) {
    const std::optional<PeerWindow> window = parse_peer_window(value, options_.keep_steps);
    if (!window) {
      note_error(std::runtime_error("rank " + std::to_string(peer) + ": unreadable latest step '" + value.substr(0, 40) + "'"));
      continue;
    }
    // Not there yet: it lags. Asked first, so that the subtraction below cannot overflow, whatever a
    // peer's key holds (INT64_MIN once made it 9.2e18 skipped steps).
    if (window->latest < r.step) continue;
    if (r.step >= window->oldest) continue;  // published, and not deleted: it comes
    stats_.steps_skipped += static_cast<uint64_t>(window->oldest) - static_cast<uint64_t>(r.step);
    cursor_[peer] = window->oldest;  // the peer deleted older steps
  }
  if (r.behind)
    for (int peer : r.wanted)
      if (cursor_[peer] == r.step) waiting.insert(peer);  // not there: asked again next poll
  return f.all;
}

void CrossRankExchange::io_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!stopping_) wake_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms));
    const bool connected = !disabled_ && connect(lock);
    if (connected) {
      publish(lock);
      if (last_published_) fetch(lock);
      if (fold_ && !disabled_) poll_folds(lock);
    } else {
      // Not connected yet: keep only the steps peers can still compare once it is.
      size_t bytes = 0;
      for (const Outgoing& o : outbox_) bytes += o.text.size();
      while (!outbox_.empty() && beyond_window(outbox_.size(), bytes)) {
        bytes -= outbox_.front().text.size();
        outbox_.pop_front();
      }
    }
    stats_.io_cpu_ns = thread_cpu_ns();
    if (stopping_) {
      // Counted from when finish() set stopping_, which may have been in the middle of this round (its store
      // calls are made without the lock). The deadline was once set only at a round's start, and a round
      // that met the end mid-way read an empty one as long past: it gave up at once, reported its peer as
      // stopped and never fetched the last steps (a divergence at step 7 of a 26-step run went unseen in 1
      // of 4 runs).
      const auto deadline = stopped_at_ + std::chrono::milliseconds(options_.final_wait_ms);
      bool complete = outbox_.empty() && last_published_.has_value();
      for (const auto& [peer, next] : cursor_)
        if (last_published_ && next <= *last_published_ && !stats_.lagging.count(global_rank(peer))) complete = false;
      if (fold_ && fold_->pending() > 0) complete = false;
      if (complete || disabled_ || !connected) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        report_missing_at_end();
        break;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
      lock.lock();
    }
  }
  if (channel_) {  // file calls only: no store, no GIL
    lock.unlock();
    channel_->leave();
    lock.lock();
  }
  done_ = true;
  drained_.notify_all();
}

}  // namespace traincheck
