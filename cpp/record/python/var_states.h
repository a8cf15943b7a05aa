// Recording tracked variables' states (state_change records, docs/formats.md §Variable state records) from
// the Python trackers. The tracker decides what to dump and computes digests on the tensors' device; this
// turns a batch of (name, tensor, digests) into kVarState events with one shared timestamp, without Python
// objects.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "record/event_format.h"

namespace traincheck {

struct VarBatchLabels {
  uint32_t var_type_id;
  uint32_t mode_id;      // 0: none
  uint32_t dump_loc_id;  // 0: none
};

// `name_ids`, `tensors`, `data_digests`, `grad_digests` are equally long lists; a grad digest is None
// when the tensor has no grad. `claims`, the tracker's claims at an optimizer's step (record/step_claims.h),
// is None or a dict from a claim's name to None or a list as long as the tensors holding per tensor None (no
// claim) or a bool; a claim it leaves out is made for no tensor. Returns false with a Python error set when
// the lists are malformed or a key names no declared claim.
//
// With `held`, the events are encoded (tensor summaries, claims, time, step and meta-vars of now) into it
// instead of being emitted, and the digest lists are not read: the tracker holds a write whose digests a
// device is still copying to host memory, and releases it when they are known.
bool record_var_states(PyObject* name_ids, PyObject* tensors, PyObject* data_digests, PyObject* grad_digests,
                       PyObject* claims, const VarBatchLabels& labels, struct HeldVarStates* held = nullptr);

// A write encoded by record_var_states and not yet emitted.
struct HeldVarStates {
  struct Event {
    uint32_t name_id;
    Py_ssize_t index;     // the tensor's position in the write's lists
    size_t payload_at;    // its payload in `payloads`
    size_t header_at;     // its VarStateHeader in its payload
    uint32_t payload_size;
  };
  uint64_t time_ns = 0;
  uint32_t meta_id = 0;
  int64_t step = 0;
  Py_ssize_t size = 0;  // the length of the write's lists
  std::vector<std::byte> payloads;
  std::vector<Event> events;
  bool released = false;
};

// Emits a held write's events, on the calling thread's stream, with their digests (lists as long as the
// write's, of int or None) and the time, step and meta-vars of the write: the records are those the write
// would have made at once. Whether recording is on now does not matter (the write was recorded). Returns
// false with a Python error set for malformed lists or a write released before.
bool release_var_states(HeldVarStates& held, PyObject* data_digests, PyObject* grad_digests);

}  // namespace traincheck
