// Reading a tensor's fields straight from torch's TensorImpl: a plain C struct of function pointers that
// traincheck._torch_fields (cpp/bindings/torch_fields_module.cpp, built against the installed torch's
// headers) hands to traincheck._core in a PyCapsule named `traincheck.tensor_fields`.
//
// _core loads under any torch and reads tensors through torch's C getters (tensor_reads.h); each getter
// call pays torch's per-call set-up (an error and warning handler, the torch-function check), about 50 ns,
// which at every optimizer step is paid several times per parameter. _torch_fields reads the same fields
// in a few loads, but it is only correct for the torch it was built against: it refuses to import under
// any other (its __version__ and git version are compared at import), and the tracker then keeps the
// getters. The two modules share no C++ type, only this struct.
//
// Each read is given a plain tensor only (exactly torch.Tensor or torch.nn.Parameter: TensorReads::plain)
// and answers 0 for one it cannot read here (an inference tensor has no version counter, a tensor whose
// storage may not be accessed has no address): the caller then reads it through the getters, which
// raise what they raise without the tool. A direct read runs no Python and no torch-function mode, and
// gives no warning.
#pragma once

#include <Python.h>

#include <cstdint>

namespace traincheck {

inline constexpr const char* kTensorFieldsCapsule = "traincheck.tensor_fields";

struct TensorFields {
  int64_t version = 0;   // t._version
  uint64_t address = 0;  // t.data_ptr() for a strided tensor; 0 for any other layout
  uint64_t impl = 0;     // its TensorImpl's address: the tensor's identity while the TensorImpl is held
  bool strided = false;  // t.layout == torch.strided
  bool requires_grad = false;
};

struct TensorFieldReader {
  uint32_t struct_size;  // sizeof(TensorFieldReader) of the module that made it: checked before use
  // 1: `t`'s fields in `out`; 0: not readable here.
  int (*fields)(PyObject* t, TensorFields* out);
  // 1: `t`'s fields in `out`, its gradient in `*grad` (a new reference; Py_None for none) and, for a
  // gradient, the gradient's fields in `grad_out` (but requires_grad, left false); 0: not readable here
  // (nothing returned). `held`: a TensorImpl the caller holds (hold_impl; 0: none): when the gradient is
  // that one, `*grad` is set to null instead (its Python object is not looked up).
  int (*fields_and_grad)(PyObject* t, uint64_t held, TensorFields* out, PyObject** grad, TensorFields* grad_out);
  // A weak hold of a TensorImpl (`impl` of a read): its memory stays allocated, so no other tensor gets
  // its address, while its storage is freed as soon as the tensor itself is (the gradient a tracker saw
  // last is told apart by address without keeping its memory); release_impl drops the hold.
  void (*hold_impl)(uint64_t impl);
  void (*release_impl)(uint64_t impl);
};

}  // namespace traincheck
