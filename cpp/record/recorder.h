// The process-wide recorder: per-thread event streams, the interned tables and the writer thread that
// turns events into trace_API_<pid>_<tid>.log files.
//
// It never throws into or exits the traced program: failures to open or write a file are counted and
// reported in traincheck_recorder_<pid>.log; events that find no memory are dropped and counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "record/clock.h"
#include "record/event_format.h"
#include "record/event_stream.h"
#include "record/heap_reclaimer.h"
#include "record/record_sink.h"
#include "record/string_table.h"

namespace traincheck {

// Read on every wrapped call: one relaxed load decides between "record" and "just call the original".
extern std::atomic<bool> g_recording_enabled;

// True while recording is off only because the current step is sampled out (not disabled by the
// script): calls of APIs that run less than once every two steps are still recorded, with everything
// they call, so that once-per-epoch calls (model.train(), model.eval()) never fall between samples.
extern std::atomic<bool> g_record_rare_calls;

// The header fields of one event that its emitter knows (the recorder adds size, meta and step). Named
// fields, because three of them are adjacent uint64_t that a positional call could swap unnoticed.
struct EventInfo {
  EventKind kind = EventKind::kCallPre;
  uint8_t flags = 0;     // EventFlags
  uint32_t api_id = 0;   // interned API name (a kVarState event's variable name)
  uint64_t time_ns = 0;  // when this event happened
  uint64_t call_ns = 0;  // the call's pre time: with the thread's uuid it forms func_call_id
  uint64_t obj_id = 0;   // id(self) for bound methods
};

struct RecorderStats {
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t write_errors = 0;
  uint64_t threads = 0;
  uint64_t sink_errors = 0;  // errors the record sink reported (record_sink.h)
  uint64_t heap_trims = 0;           // HeapReclaimer: free heap handed back to the kernel
  uint64_t heap_released_bytes = 0;
  uint64_t peak_rss_bytes = 0;       // the largest resident size the writer saw (0: not watched)
  uint64_t event_memory_bytes = 0;   // the event chunks mapped (the recorder's own buffers)
};

class Recorder {
 public:
  static Recorder& instance();

  // Starts recording into `output_dir` (created if needed). Idempotent for the same directory.
  // `heap_reclaim_bytes`: the writer gives free heap pages back to the kernel whenever the process's
  // resident size grew by this much (record/heap_reclaimer.h); 0 leaves the heap alone.
  void start(const std::string& output_dir, uint32_t writer_period_ms = 20,
             uint64_t heap_reclaim_bytes = kDefaultHeapReclaimBytes);
  static constexpr uint64_t kDefaultHeapReclaimBytes = 64ull << 20;
  // Drains every published event to the files and returns once they are written.
  void flush();
  // Flushes, stops the writer and disables recording; later events are ignored.
  void shutdown();

  uint32_t intern_name(std::string_view name) { return names_.add(name); }
  // Publishes the meta_vars members other than "step" (JSON members without braces, e.g.
  // "\"stage\":\"training\"", or empty) that later events carry. Called when they change (rarely).
  uint32_t publish_meta(std::string_view json_members);
  uint32_t current_meta() const { return current_meta_.load(std::memory_order_relaxed); }
  // The step that later events carry as meta_vars.step (every iteration: one store, nothing interned).
  void publish_step(int64_t step) { current_step_.store(step, std::memory_order_relaxed); }
  int64_t current_step() const { return current_step_.load(std::memory_order_relaxed); }

  // The calling thread's stream (registers the thread on first use, and again after fork).
  EventStream* stream();

  // Appends one event; the payload (may be empty) is copied after the header. Call events go to the
  // thread's trace_API file, kVarState events to its trace_VAR file.
  void emit(const EventInfo& event, const std::byte* payload = nullptr, uint32_t payload_size = 0) {
    emit_at(event, current_meta(), current_step(), payload, payload_size);
  }
  // The same with the meta-vars and step the event happened under: a write emitted after it was made
  // (record_var_states' held writes) carries those of its time.
  void emit_at(const EventInfo& event, uint32_t meta_id, int64_t step, const std::byte* payload = nullptr,
               uint32_t payload_size = 0);

  // A call_ns unique on this thread (monotonic ns, bumped past the previous one): func_call_id's suffix.
  static uint64_t next_call_ns();

  // Installs a copy of `sink` (record_sink.h): from the next writer pass on, it sees every formatted
  // line before the line is written. nullptr removes the current sink without closing it. Waits until
  // a pass that is using the previous sink has finished with it. False (nothing installed) on a version
  // mismatch. shutdown() closes an installed sink; a fork child gets the sink's own context for it
  // (record_sink.h, on_fork_child) or drops it (see at_fork_child).
  bool set_sink(const TcRecordSink* sink);
  bool has_sink() const;  // a fork child: true from the fork on when the sink follows forks

  RecorderStats stats() const;
  const std::string& output_dir() const { return output_dir_; }
  uint64_t process_id() const { return pid_; }

  const StringTable& names() const { return names_; }
  const StringTable& metas() const { return metas_; }

 private:
  Recorder();
  EventStream* register_thread();
  void ensure_writer_locked();
  void writer_loop();
  size_t drain_all();
  void poll_heap();
  void write_file(EventStream& stream, struct TraceFile& file, const char* kind);
  // Counts a batch that could not be written and says so on stderr, once per process (a refused link
  // is named where it is refused). `path` and `offset`: where the batch would have begun (the file's
  // size, to which a partly written batch was cut back); the recorder's log lists the places so readers
  // know where records are missing.
  void lose_batch(const std::string& pending, int error, const std::string& path, uint64_t offset);
  uint64_t adopt_fork_child_sink_locked();  // under sink_mutex_; returns the sink's errors
  static void at_fork_prepare();
  static void at_fork_parent();
  static void at_fork_child();

  StringTable names_;
  StringTable metas_;
  std::atomic<uint32_t> current_meta_{0};
  std::atomic<int64_t> current_step_{0};
  ChunkPool pool_;

  mutable std::mutex mutex_;  // guards streams_, writer state and the flush handshake
  std::mutex pass_mutex_;     // held by the writer for a whole pass (prefill, drain, heap poll) and across a fork
  std::condition_variable wake_writer_;
  std::condition_variable flushed_;
  std::vector<std::unique_ptr<EventStream>> streams_;
  std::thread* writer_ = nullptr;  // a pointer: the child of a fork must forget it without joining
  std::atomic<bool> writer_started_{false};  // the writer reached writer_loop (its start-up is over)
  bool stop_ = false;
  uint64_t flush_requested_ = 0;
  uint64_t flush_completed_ = 0;
  uint32_t writer_period_ms_ = 20;
  // Polled by the writer only; replaced by start() before the writer runs (under mutex_).
  std::unique_ptr<HeapReclaimer> reclaimer_;
  std::string output_dir_;
  uint64_t pid_ = 0;
  std::atomic<uint64_t> generation_{1};  // bumped in a fork child: threads re-register

  // The sink is used by the writer only, under sink_mutex_ (held for a whole pass, so set_sink never
  // frees a sink in use). Lock order: sink_mutex_ before mutex_.
  mutable std::mutex sink_mutex_;
  TcRecordSink sink_{};
  bool sink_active_ = false;
  bool sink_fork_pending_ = false;  // a fork child: the sink's context for it is made at the first pass
  bool sink_dropped_by_fork_ = false;
  std::atomic<uint64_t> sink_errors_{0};

  std::atomic<uint64_t> heap_trims_{0};  // the reclaimer's figures, published by the writer
  std::atomic<uint64_t> heap_released_bytes_{0};
  std::atomic<uint64_t> peak_rss_bytes_{0};
  std::atomic<uint64_t> events_written_{0};
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> lines_lost_{0};     // records never written (full disk, unwritable folder)
  std::atomic<bool> warned_write_{false};   // the first write error was announced on stderr
  // Where lines were lost (file name in the output folder, byte offset, lines), for the log: the first
  // kMaxLostPlaces, then only a count of the lines lost elsewhere.
  struct LostPlace {
    std::string file;
    uint64_t offset = 0;
    uint64_t lines = 0;
  };
  static constexpr size_t kMaxLostPlaces = 1000;
  std::mutex lost_mutex_;
  std::vector<LostPlace> lost_places_;
  uint64_t lines_lost_unplaced_ = 0;
};

}  // namespace traincheck
