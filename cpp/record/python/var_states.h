// Recording tracked variables' states (state_change records, docs/formats.md §Variable state records) from
// the Python trackers. The tracker decides what to dump and computes digests on the tensors' device; this
// turns a batch of (name, tensor, digests) into kVarState events with one shared timestamp, without Python
// objects.
#pragma once

#include <Python.h>

#include <cstdint>

namespace traincheck {

struct VarBatchLabels {
  uint32_t var_type_id;
  uint32_t mode_id;      // 0: none
  uint32_t dump_loc_id;  // 0: none
};

// `name_ids`, `tensors`, `data_digests`, `grad_digests` are equally long lists; a grad digest is None
// when the tensor has no grad. `grad_resets` is None or another such list: per tensor None (no claim), or
// whether its gradient was reset since its optimizer's previous step (the tracker's judgement, written
// as "_TRAINCHECK_grad_reset"). Returns false with a Python error set when the lists are malformed.
bool record_var_states(PyObject* name_ids, PyObject* tensors, PyObject* data_digests, PyObject* grad_digests,
                       PyObject* grad_resets, const VarBatchLabels& labels);

}  // namespace traincheck
