// Summarises Python arguments and return values into the event payload
// (docs/formats.md §Argument and return values), in C++. Runs on the training thread only for APIs whose
// invariants need values (or in full mode).
#pragma once

#include <Python.h>

#include "record/payload_encoder.h"

namespace traincheck {

// Types recognised without importing torch from C++: set once by the Python layer.
struct TorchTypes {
  PyTypeObject* tensor = nullptr;     // torch.Tensor
  PyTypeObject* parameter = nullptr;  // torch.nn.Parameter
  PyTypeObject* dtype = nullptr;      // torch.dtype
  PyTypeObject* device = nullptr;     // torch.device
  PyTypeObject* module = nullptr;     // torch.nn.Module: recorded with its `training` flag
};
void set_torch_types(const TorchTypes& types);

// Appends one value. Never raises: a value that cannot be summarised is recorded as {"<type>": {}}
// and any Python error raised while inspecting it is cleared.
void capture_value(PayloadEncoder& out, PyObject* value, int depth = 0);

// Which arguments to record, when an invariant names only some (selective mode's dump_args_config):
// positional indices (bit i = args[i], after an omitted classmethod `cls`) and keyword names.
struct ArgumentFilter {
  uint64_t positions = 0;
  PyObject* keywords = nullptr;  // tuple of interned str, or null for none; owned by the wrapper
};

// Appends the args section for a vectorcall argument list: every argument, or only those `filter`
// selects (null: all). Positional arguments keep their index either way.
void capture_arguments(PayloadEncoder& out, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                       const ArgumentFilter* filter = nullptr);

// Fills `summary` and up to kMaxTensorDims `dims` from a tensor's attributes
// (docs/formats.md §Argument and return values).
constexpr int kMaxTensorDims = 16;
void summarize_tensor(PyObject* tensor, TensorSummary& summary, int64_t* dims);

// Appends a kDict of the object's own primitive attributes (user attributes on a Parameter) and returns
// true, or appends nothing and returns false when it has none.
bool capture_user_attributes(PayloadEncoder& out, PyObject* obj);

bool is_tensor(PyObject* obj);

// "<module>.<qualname>" of a type, the original's typename() (builtins. dropped), as an interned id.
uint32_t type_name_id(PyTypeObject* type);

}  // namespace traincheck
