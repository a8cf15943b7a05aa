/* The record sink: how code outside the recorder sees every trace line the writer thread formats,
 * without the recorder linking it. The in-process online checker (traincheck._online) fills one and
 * hands it to traincheck._core in a PyCapsule named TC_RECORD_SINK_CAPSULE.
 *
 * Plain C (a context pointer and function pointers): the two modules are separate shared objects, maybe
 * built apart, so no C++ vtable, std:: type or exception may cross between them.
 *
 * Contract (record/recorder.h, Recorder::set_sink):
 *   - every call comes from the recorder's writer thread (on_close: from the thread that shuts the
 *     recorder down, after the writer has stopped); calls never overlap;
 *   - on_lines gets complete JSON lines ('\n'-terminated) of one stream, exactly as they go to that
 *     stream's trace_API_<pid>_<tid>.log (kind TC_SINK_API) or trace_VAR_<pid>_<tid>.log (TC_SINK_VAR)
 *     file, before they are written; a thread's lines come in the order the thread emitted them (API
 *     and VAR lines of one thread interleaved as emitted);
 *   - on_pass_end follows each writer pass (every stream drained once; also what flush() waits for);
 *   - on_close is called once, at shutdown, after the last pass: the sink finalises (reports);
 *   - in a fork child, on_fork_child (may be NULL: the child runs without a sink) is called once, on the
 *     child's writer thread before its first pass, never in the fork handler itself: it sets
 *     *child_context to the context the child's sink uses from then on (the same functions), or to
 *     NULL for none. The context it gets is the parent's as the fork copied it, never inside a call of
 *     the sink (the recorder holds the sink across the fork); it must not take locks the parent's other
 *     threads may have held at the fork;
 *   - a function returns the number of errors it had (0: none); the recorder adds them to its log. It
 *     must not throw, block on the training thread's locks, or call into Python.
 */
#ifndef TRAINCHECK_RECORD_SINK_H
#define TRAINCHECK_RECORD_SINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TC_RECORD_SINK_VERSION 2u
#define TC_RECORD_SINK_CAPSULE "traincheck.record_sink"

enum { TC_SINK_API = 0, TC_SINK_VAR = 1 };

typedef struct TcRecordSink {
  uint32_t version; /* TC_RECORD_SINK_VERSION: the recorder refuses another */
  void* context;
  uint64_t (*on_lines)(void* context, int kind, uint64_t pid, uint64_t tid, const char* data, size_t size);
  uint64_t (*on_pass_end)(void* context);
  uint64_t (*on_close)(void* context);
  uint64_t (*on_fork_child)(void* context, void** child_context);
} TcRecordSink;

#ifdef __cplusplus
}
#endif

#endif
