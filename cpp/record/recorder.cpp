#include "record/recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "record/event_formatter.h"

namespace traincheck {

std::atomic<bool> g_recording_enabled{false};
std::atomic<bool> g_record_rare_calls{false};

namespace {

constexpr size_t kMaxChunks = 256;       // 256 MiB of unwritten events at most, then drop and count
constexpr size_t kSpareChunks = 2;       // kept resident so a thread never faults pages in mid-step
constexpr size_t kWriteThreshold = 1 << 20;

struct ThreadSlot {
  EventStream* stream = nullptr;
  uint64_t generation = 0;
  uint64_t last_call_ns = 0;
};
// initial-exec: one TLS load on the hot path instead of a __tls_get_addr call.
thread_local ThreadSlot tls_slot __attribute__((tls_model("initial-exec")));

// Marks the thread's stream as finished when the thread exits so the writer can close its file.
struct ThreadExitNotifier {
  EventStream* stream = nullptr;
  ~ThreadExitNotifier() {
    if (stream == nullptr) return;
    // A late event on this thread (another TLS destructor calling torch) starts a fresh stream rather
    // than writing into one the writer may already have retired.
    if (tls_slot.stream == stream) tls_slot.stream = nullptr;
    stream->mark_thread_exited();
  }
};
thread_local ThreadExitNotifier tls_exit_notifier;

std::string random_hex32() {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    const uint64_t seed = monotonic_ns() ^ (static_cast<uint64_t>(getpid()) << 32);
    for (size_t i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(seed >> ((i % 8) * 8));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xF];
  }
  return out;
}

bool make_dirs(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

// One output file of a stream, opened on its first write.
struct TraceFile {
  int fd = -1;
  std::string pending;
  size_t sunk = 0;  // bytes of `pending` already handed to the record sink
  bool refused = false;  // its name is a symbolic link: said once, its records dropped
};

// Hands the lines of `file` the sink has not seen yet to it; returns the errors it reported.
static uint64_t to_sink(const TcRecordSink& sink, TraceFile& file, int kind, uint64_t pid, uint64_t tid) {
  if (file.pending.size() <= file.sunk) return 0;
  const uint64_t errors = sink.on_lines(sink.context, kind, pid, tid, file.pending.data() + file.sunk, file.pending.size() - file.sunk);
  file.sunk = file.pending.size();
  return errors;
}

// A stream's API and VAR files (trace_API_<pid>_<tid>.log, trace_VAR_<pid>_<tid>.log).
struct StreamFile {
  TraceFile api;
  TraceFile var;
};

static void close_files(StreamFile& file) {
  for (TraceFile* f : {&file.api, &file.var}) {
    if (f->fd >= 0) ::close(f->fd);
    f->fd = -1;
  }
}

// Writer-thread-only state: the open file of each stream. A pointer, so that a fork child can drop a
// map the writer may have been updating at the moment of the fork.
static std::unordered_map<EventStream*, StreamFile>* g_writer_files =
    new std::unordered_map<EventStream*, StreamFile>();
static std::unordered_map<EventStream*, StreamFile>& writer_files() { return *g_writer_files; }

Recorder& Recorder::instance() {
  // Leaked on purpose: wrappers may still run during interpreter teardown, after static destructors.
  static Recorder* recorder = new Recorder();
  return *recorder;
}

Recorder::Recorder() : pool_(kMaxChunks) {
  pid_ = static_cast<uint64_t>(getpid());
  current_meta_.store(metas_.add(""), std::memory_order_relaxed);
  pthread_atfork(&Recorder::at_fork_prepare, &Recorder::at_fork_parent, &Recorder::at_fork_child);
}

void Recorder::start(const std::string& output_dir, uint32_t writer_period_ms, uint64_t heap_reclaim_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  output_dir_ = output_dir;
  writer_period_ms_ = writer_period_ms == 0 ? 20 : writer_period_ms;
  if (writer_ == nullptr) reclaimer_ = std::make_unique<HeapReclaimer>(heap_reclaim_bytes);
  stop_ = false;
  make_dirs(output_dir_);
  ensure_writer_locked();
  g_recording_enabled.store(true, std::memory_order_relaxed);
}

void Recorder::ensure_writer_locked() {
  if (writer_ != nullptr || stop_ || output_dir_.empty()) return;
  writer_started_.store(false, std::memory_order_relaxed);
  writer_ = new std::thread([this] { writer_loop(); });
}

uint32_t Recorder::publish_meta(std::string_view json_members) {
  const uint32_t id = metas_.add(json_members);
  current_meta_.store(id, std::memory_order_release);
  return id;
}

EventStream* Recorder::stream() {
  ThreadSlot& slot = tls_slot;
  if (slot.stream != nullptr && slot.generation == generation_.load(std::memory_order_relaxed)) {
    return slot.stream;
  }
  return register_thread();
}

EventStream* Recorder::register_thread() {
  auto stream = std::make_unique<EventStream>(pool_, static_cast<uint64_t>(pthread_self()), random_hex32());
  EventStream* raw = stream.get();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(std::move(stream));
    ensure_writer_locked();
  }
  tls_slot.stream = raw;
  tls_slot.generation = generation_.load(std::memory_order_relaxed);
  tls_exit_notifier.stream = raw;
  return raw;
}

uint64_t Recorder::next_call_ns() {
  uint64_t now = monotonic_ns();
  ThreadSlot& slot = tls_slot;
  if (now <= slot.last_call_ns) now = slot.last_call_ns + 1;
  slot.last_call_ns = now;
  return now;
}

void Recorder::emit_at(const EventInfo& e, uint32_t meta_id, int64_t step, const std::byte* payload,
                       uint32_t payload_size) {
  EventStream* s = stream();
  const uint32_t size = align8(static_cast<uint32_t>(sizeof(EventHeader)) + payload_size);
  std::byte* at = s->reserve(size);
  if (at == nullptr) {
    s->count_dropped();
    return;
  }
  EventHeader h{size, e.kind, e.flags, 0, e.api_id, meta_id, e.time_ns, e.call_ns, e.obj_id, step};
  std::memcpy(at, &h, sizeof h);
  if (payload_size) std::memcpy(at + sizeof h, payload, payload_size);
  const uint32_t used = static_cast<uint32_t>(sizeof h) + payload_size;
  if (size > used) std::memset(at + used, 0, size - used);
  s->commit(size);
}

void Recorder::write_file(EventStream& stream, TraceFile& file, const char* kind) {
  if (file.pending.empty()) return;
  auto path_of_file = [&] {
    return output_dir_ + "/trace_" + kind + "_" + std::to_string(pid_) + "_" + std::to_string(stream.thread_id()) + ".log";
  };
  if (file.fd < 0) {
    const std::string path = path_of_file();
    // O_NOFOLLOW: a link planted in the output folder under a trace's name is never written through.
    file.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (file.fd < 0) {
      const int error = errno;
      if (error == ELOOP && !file.refused) {
        file.refused = true;
        std::fprintf(stderr, "traincheck: warning: %s is a symbolic link; refusing to write the trace through it (its records are dropped)\n",
                     path.c_str());
      }
      lose_batch(file.pending, error, path, 0);
      file.pending.clear();
      file.sunk = 0;
      return;
    }
  }
  // Whole lines or none: a batch the disk could not take in full is cut back to where it began, so a
  // full disk never leaves a torn line mid-file for the analyzers to trip on when space comes back.
  const off_t batch_start = ::lseek(file.fd, 0, SEEK_END);
  size_t done = 0;
  while (done < file.pending.size()) {
    const ssize_t n = ::write(file.fd, file.pending.data() + done, file.pending.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (done > 0 && batch_start >= 0 && ::ftruncate(file.fd, batch_start) != 0) {
        // Could not cut back: the torn tail stays; readers skip it as a damaged line, with a warning.
      }
      lose_batch(file.pending, error, path_of_file(), batch_start >= 0 ? static_cast<uint64_t>(batch_start) : 0);
      break;
    }
    done += static_cast<size_t>(n);
  }
  file.pending.clear();
  file.sunk = 0;
}

void Recorder::lose_batch(const std::string& pending, int error, const std::string& path, uint64_t offset) {
  const auto lines = static_cast<uint64_t>(std::count(pending.begin(), pending.end(), '\n'));
  write_errors_.fetch_add(1, std::memory_order_relaxed);
  lines_lost_.fetch_add(lines, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(lost_mutex_);
    const std::string name = path.substr(path.find_last_of('/') + 1);
    if (!lost_places_.empty() && lost_places_.back().file == name && lost_places_.back().offset == offset)
      lost_places_.back().lines += lines;  // batches lost in a row leave one gap
    else if (lost_places_.size() < kMaxLostPlaces)
      lost_places_.push_back(LostPlace{name, offset, lines});
    else
      lines_lost_unplaced_ += lines;
  }
  // A refused link was named already (write_file); the first other failure is said once.
  if (error != ELOOP && !warned_write_.exchange(true)) {
    std::fprintf(stderr, "traincheck: warning: cannot write the trace in %s (%s); training goes on, records are dropped until writing works again\n",
                 output_dir_.c_str(), std::strerror(error));
  }
}

size_t Recorder::drain_all() {
  std::vector<EventStream*> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot.reserve(streams_.size());
    for (auto& s : streams_) snapshot.push_back(s.get());
  }
  size_t total = 0;
  std::vector<EventStream*> finished;
  // Held for the whole pass: set_sink() waits for it, so the sink's context outlives every call.
  std::unique_lock<std::mutex> sink_lock(sink_mutex_);
  uint64_t sink_errors = 0;
  if (sink_fork_pending_) sink_errors += adopt_fork_child_sink_locked();
  const TcRecordSink* sink = sink_active_ ? &sink_ : nullptr;
  for (EventStream* s : snapshot) {
    StreamFile& file = writer_files()[s];
    const bool exited = s->thread_exited();  // read before draining: no event can follow an exit
    const FormatContext ctx{names_, metas_, pid_, s->thread_id(), s->call_uuid()};
    const uint64_t tid = s->thread_id();
    TraceFile* last = nullptr;  // the file of the previous event: the sink gets a thread's lines in order
    const size_t n = s->drain([&](const std::byte* event) {
      const bool is_var = static_cast<EventKind>(event[offsetof(EventHeader, kind)]) == EventKind::kVarState;
      TraceFile& out = is_var ? file.var : file.api;
      if (sink != nullptr && last != nullptr && last != &out)
        sink_errors += to_sink(*sink, *last, last == &file.var ? TC_SINK_VAR : TC_SINK_API, pid_, tid);
      last = &out;
      format_event(out.pending, event, ctx);
      if (out.pending.size() >= kWriteThreshold) {
        if (sink != nullptr) sink_errors += to_sink(*sink, out, is_var ? TC_SINK_VAR : TC_SINK_API, pid_, tid);
        write_file(*s, out, is_var ? "VAR" : "API");
      }
    });
    if (sink != nullptr) {  // only `last` can hold lines the sink has not seen
      sink_errors += to_sink(*sink, file.api, TC_SINK_API, pid_, tid);
      sink_errors += to_sink(*sink, file.var, TC_SINK_VAR, pid_, tid);
    }
    write_file(*s, file.api, "API");
    write_file(*s, file.var, "VAR");
    total += n;
    if (exited) finished.push_back(s);
  }
  if (sink != nullptr) sink_errors += sink->on_pass_end(sink->context);
  if (sink_errors) sink_errors_.fetch_add(sink_errors, std::memory_order_relaxed);
  sink_lock.unlock();
  events_written_.fetch_add(total, std::memory_order_relaxed);
  if (!finished.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (EventStream* s : finished) {
      auto it = writer_files().find(s);
      if (it != writer_files().end()) {
        close_files(it->second);
        writer_files().erase(it);
      }
      for (auto i = streams_.begin(); i != streams_.end(); ++i) {
        if (i->get() == s) {
          streams_.erase(i);
          break;
        }
      }
    }
  }
  return total;
}

void Recorder::writer_loop() {
  writer_started_.store(true, std::memory_order_release);  // before mutex_: a fork waits for it with mutex_ held
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const uint64_t flush_target = flush_requested_;
    const bool stopping = stop_;
    lock.unlock();
    {
      std::lock_guard<std::mutex> pass(pass_mutex_);  // a fork waits for the pass to end (at_fork_prepare)
      pool_.prefill(kSpareChunks);
      drain_all();
      poll_heap();
    }
    lock.lock();
    flush_completed_ = flush_target;
    flushed_.notify_all();
    if (stopping) break;
    if (flush_requested_ == flush_completed_ && !stop_) {
      wake_writer_.wait_for(lock, std::chrono::milliseconds(writer_period_ms_));
    }
  }
}

// Writer thread, outside mutex_: a trim may take milliseconds and must not hold up flush() or a new
// thread's registration. The figures are published for stats().
void Recorder::poll_heap() {
  HeapReclaimer* reclaimer = reclaimer_.get();
  if (reclaimer == nullptr) return;
  reclaimer->poll();
  heap_trims_.store(reclaimer->stats().trims, std::memory_order_relaxed);
  heap_released_bytes_.store(reclaimer->stats().released_bytes, std::memory_order_relaxed);
  peak_rss_bytes_.store(reclaimer->stats().peak_rss_bytes, std::memory_order_relaxed);
}

void Recorder::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (writer_ == nullptr) return;
  const uint64_t target = ++flush_requested_;
  wake_writer_.notify_all();
  flushed_.wait(lock, [&] { return flush_completed_ >= target || writer_ == nullptr; });
}

void Recorder::shutdown() {
  std::thread* writer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    g_recording_enabled.store(false, std::memory_order_relaxed);
    g_record_rare_calls.store(false, std::memory_order_relaxed);
    stop_ = true;
    writer = writer_;
    wake_writer_.notify_all();
  }
  if (writer != nullptr) {
    writer->join();  // its last pass drains everything published before stop_
    delete writer;
  }
  {
    // After the writer's last pass: the sink finalises (the online checker writes its report).
    std::lock_guard<std::mutex> sink_lock(sink_mutex_);
    sink_fork_pending_ = false;  // a fork child whose writer never ran: it had no records to check
    if (sink_active_) {
      sink_active_ = false;
      sink_errors_.fetch_add(sink_.on_close(sink_.context), std::memory_order_relaxed);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  writer_ = nullptr;
  for (auto& [stream, file] : writer_files()) close_files(file);
  const RecorderStats s = [&] {
    RecorderStats st;
    for (auto& stream : streams_) st.events_dropped += stream->dropped();
    st.write_errors = write_errors_.load();
    st.sink_errors = sink_errors_.load();
    return st;
  }();
  if (s.write_errors) {
    std::fprintf(stderr, "traincheck: warning: %llu trace records of process %d could not be written (%llu write errors): the trace in %s is incomplete\n",
                 static_cast<unsigned long long>(lines_lost_.load()), static_cast<int>(pid_),
                 static_cast<unsigned long long>(s.write_errors), output_dir_.c_str());
  }
  const uint64_t heap_trims = heap_trims_.load();
  // Heap trims alone are no problem to report: they join the log when it is written anyway (and are
  // in _core.stats()), so a healthy process, a DataLoader worker's included, leaves no recorder log.
  if ((s.events_dropped || s.write_errors || s.sink_errors || sink_dropped_by_fork_) && !output_dir_.empty()) {
    const std::string path = output_dir_ + "/traincheck_recorder_" + std::to_string(pid_) + ".log";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);  // never through a link
    FILE* f = fd >= 0 ? ::fdopen(fd, "a") : nullptr;
    if (f == nullptr && fd >= 0) ::close(fd);
    if (f != nullptr) {
      std::fprintf(f, "events_dropped: %llu\nwrite_errors: %llu\n",
                   static_cast<unsigned long long>(s.events_dropped),
                   static_cast<unsigned long long>(s.write_errors));
      if (s.sink_errors) std::fprintf(f, "sink_errors: %llu\n", static_cast<unsigned long long>(s.sink_errors));
      {  // where the lines were lost (trace/recorder_log.h reads these)
        std::lock_guard<std::mutex> lost_lock(lost_mutex_);
        for (const LostPlace& p : lost_places_)
          std::fprintf(f, "lost_lines: %llu at %llu in %s\n", static_cast<unsigned long long>(p.lines),
                       static_cast<unsigned long long>(p.offset), p.file.c_str());
        if (lines_lost_unplaced_)
          std::fprintf(f, "lost_lines_unplaced: %llu\n", static_cast<unsigned long long>(lines_lost_unplaced_));
      }
      if (heap_trims) {  // docs/collection.md §Memory: freed heap the training could not reuse
        std::fprintf(f, "heap_trims: %llu\nheap_released_mib: %llu\npeak_rss_mib: %llu\n",
                     static_cast<unsigned long long>(heap_trims),
                     static_cast<unsigned long long>(heap_released_bytes_.load() >> 20),
                     static_cast<unsigned long long>(peak_rss_bytes_.load() >> 20));
      }
      if (sink_dropped_by_fork_)
        std::fprintf(f, "online check: off in this process (a fork child: the parent's sink could not follow the fork)\n");
      std::fclose(f);
    }
  }
}

bool Recorder::set_sink(const TcRecordSink* sink) {
  if (sink != nullptr && (sink->version != TC_RECORD_SINK_VERSION || sink->on_lines == nullptr ||
                          sink->on_pass_end == nullptr || sink->on_close == nullptr))
    return false;
  std::lock_guard<std::mutex> lock(sink_mutex_);
  sink_active_ = sink != nullptr;
  sink_fork_pending_ = false;
  sink_ = sink != nullptr ? *sink : TcRecordSink{};
  return true;
}

bool Recorder::has_sink() const {
  std::lock_guard<std::mutex> lock(sink_mutex_);
  return sink_active_ || sink_fork_pending_;
}

// In a fork child, on the writer thread before its first pass: the sink makes the child's own context
// from the parent's (record_sink.h, on_fork_child); without one, the child runs unchecked.
uint64_t Recorder::adopt_fork_child_sink_locked() {
  sink_fork_pending_ = false;
  void* child = nullptr;
  const uint64_t errors = sink_.on_fork_child(sink_.context, &child);
  if (child != nullptr) {
    sink_.context = child;
    sink_active_ = true;
  } else {
    sink_ = TcRecordSink{};
    sink_dropped_by_fork_ = true;
  }
  return errors;
}

RecorderStats Recorder::stats() const {
  RecorderStats s;
  s.events_written = events_written_.load(std::memory_order_relaxed);
  s.write_errors = write_errors_.load(std::memory_order_relaxed);
  s.sink_errors = sink_errors_.load(std::memory_order_relaxed);
  s.event_memory_bytes = pool_.allocated() * sizeof(Chunk);
  s.heap_trims = heap_trims_.load(std::memory_order_relaxed);
  s.heap_released_bytes = heap_released_bytes_.load(std::memory_order_relaxed);
  s.peak_rss_bytes = peak_rss_bytes_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  s.threads = streams_.size();
  for (auto& stream : streams_) s.events_dropped += stream->dropped();
  return s;
}

// fork(): the prepare handler takes the locks so the child never inherits them held by the writer (the
// sink's too: the child then copies a sink that no pass is inside); the child forgets the parent's
// threads, streams and files and re-registers lazily. Lock order: pass_mutex_, sink_mutex_, mutex_, the
// pool's. pass_mutex_ first: the fork waits until the writer is between passes, so the child never
// copies a heap lock the writer held mid-allocation (AddressSanitizer's allocator, unlike glibc's, does
// not take its locks across a fork: a child that allocated then hung for good). For the same reason it
// waits for a writer thread just created to reach writer_loop: a thread's start-up frees and allocates
// (under AddressSanitizer, with its allocator's locks), and a fork right after start() copied those held.
void Recorder::at_fork_prepare() {
  Recorder& r = instance();
  r.pass_mutex_.lock();
  r.sink_mutex_.lock();
  r.mutex_.lock();
  while (r.writer_ != nullptr && !r.writer_started_.load(std::memory_order_acquire)) std::this_thread::yield();
  r.pool_.fork_prepare();
}
void Recorder::at_fork_parent() {
  instance().pool_.fork_parent();
  instance().mutex_.unlock();
  instance().sink_mutex_.unlock();
  instance().pass_mutex_.unlock();
}
void Recorder::at_fork_child() {
  Recorder& r = instance();
  r.pool_.fork_child();
  new (&r.mutex_) std::mutex();
  new (&r.lost_mutex_) std::mutex();  // a thread of the parent's may have held it at the fork
  new (&r.wake_writer_) std::condition_variable();
  new (&r.flushed_) std::condition_variable();
  r.writer_ = nullptr;  // that thread does not exist here
  r.writer_started_ = false;
  // The sink's context belongs to the parent: its checker's state (open calls, counts) describes the
  // parent's records. A sink that can follows the fork with a context of the child's own, made on the
  // child's writer thread before its first pass (adopt_fork_child_sink_locked), not here, where the
  // child's training thread waits; any other sink is dropped, and the child's recorder log says so.
  new (&r.sink_mutex_) std::mutex();
  new (&r.pass_mutex_) std::mutex();
  const bool had_sink = r.sink_active_ || r.sink_fork_pending_;  // pending: forked before its first pass
  if (had_sink && r.sink_.on_fork_child != nullptr) {
    r.sink_fork_pending_ = true;
  } else {
    if (had_sink) r.sink_dropped_by_fork_ = true;
    r.sink_ = TcRecordSink{};
  }
  r.sink_active_ = false;
  for (auto& s : r.streams_) (void)s.release();  // the parent's memory: abandoned, never freed twice
  r.streams_.clear();
  // The parent's open trace files stay open in the child but are never written (their fds leak, once).
  g_writer_files = new std::unordered_map<EventStream*, StreamFile>();
  r.flush_requested_ = r.flush_completed_ = 0;
  r.pid_ = static_cast<uint64_t>(getpid());
  r.generation_.fetch_add(1, std::memory_order_relaxed);
  // The parent's resident mark is not the child's: the child starts its own (and its own counts).
  if (r.reclaimer_) r.reclaimer_ = std::make_unique<HeapReclaimer>(r.reclaimer_->step_bytes());
  r.heap_trims_ = 0;
  r.heap_released_bytes_ = 0;
  r.peak_rss_bytes_ = 0;
  // Likewise the counts its log reports: the parent's errors are the parent's to report.
  r.events_written_ = 0;
  r.write_errors_ = 0;
  r.lines_lost_ = 0;
  r.warned_write_ = false;
  r.lost_places_.clear();
  r.lines_lost_unplaced_ = 0;
  r.sink_errors_ = 0;
}

}  // namespace traincheck
