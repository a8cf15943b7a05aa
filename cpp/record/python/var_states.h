// Recording tracked variables' states (state_change records, docs/formats.md §Variable state records) from
// the Python trackers. The tracker decides what to dump and computes digests on the tensors' device; this
// turns a batch of (name, tensor, digests) into kVarState events with one shared timestamp, without Python
// objects.
#pragma once

#include <Python.h>

#include <cstdint>

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
bool record_var_states(PyObject* name_ids, PyObject* tensors, PyObject* data_digests, PyObject* grad_digests,
                       PyObject* claims, const VarBatchLabels& labels);

}  // namespace traincheck
