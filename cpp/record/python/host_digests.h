// The `full` digests of host tensors (record/tensor_digest.h) for the model tracker's Digester
// (python/traincheck/tracking/digest.py), many tensors in one call: read in place, in one pass, with no
// torch op and no temporary. On the host the digests' torch ops were the tracker's largest cost (a bit
// view, a widening copy, a product and a sum per batch, and a few Python calls per tensor to set them up).
//
// A tensor is taken here when it is exactly a torch.Tensor or torch.nn.Parameter (a subclass may keep its
// data elsewhere), on the CPU, strided, contiguous, and of a dtype the widths table names (real dtypes:
// floats, integers, bool). Any other is left to the torch ops, which give the same value where both apply.
// Memory is read only within the tensor's storage: a tensor whose storage does not hold its elements (freed
// by resizing it to 0, as FSDP does between uses; torch's own ops crash on it) has no values, and digests
// to 0 here, as a meta tensor does.
//
// Only used with the GIL held. Errors are Python errors: null with one set.
#pragma once

#include <Python.h>

#include "record/python/tensor_reads.h"

namespace traincheck {

class HostDigests {
 public:
  HostDigests() = default;
  HostDigests(const HostDigests&) = delete;
  HostDigests& operator=(const HostDigests&) = delete;
  ~HostDigests();

  // torch.Tensor, torch.nn.Parameter, torch.strided; `widths`: {dtype: the width in bytes its bits are
  // read at}; `int64`: torch.int64, the weight table's dtype.
  bool init(PyObject* tensor, PyObject* parameter, PyObject* strided, PyObject* widths, PyObject* int64);

  // For a list of tensors and the weight table (a contiguous int64 CPU tensor of P weights):
  // (values, rest), values[i] the digest of tensors[i] when taken here and 0 otherwise, rest the indices
  // (ascending) of those not taken.
  PyObject* digests(PyObject* tensors, PyObject* table) const;

 private:
  // The width `t` is read at, 0 when it is not taken here; false with an error set.
  bool width(PyObject* t, int& out) const;
  // Whether the `bytes` at `data` lie inside the storage of `t`; false with an error set when unreadable.
  bool in_storage(PyObject* t, uint64_t data, uint64_t bytes, bool& out) const;

  TensorReads reads_;
  PyObject* widths_ = nullptr;  // strong
  PyObject* int64_ = nullptr;   // strong
};

}  // namespace traincheck
