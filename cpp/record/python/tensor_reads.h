// Reads of the tensor attributes the model tracker watches (version counter, gradient, data address,
// requires_grad) and the host digests read (device, dtype, size, contiguity), from C++ without torch headers: the extension must load under any installed torch.
//
// For a tensor whose type is exactly torch.Tensor or torch.nn.Parameter, each read calls torch's own C
// getter (a getset or method descriptor of torch._C.TensorBase, resolved once) directly: no attribute
// lookup through the type's MRO, no bound method, and a recorder wrapper that --instr-descriptors set on
// torch.Tensor is never run. Any other type (a tensor subclass, DTensor) is read through ordinary
// attribute access, so a subclass's own properties are honoured.
//
// With traincheck._torch_fields loaded (set_field_reader), a plain tensor's version, data address, layout,
// gradient and requires_grad are read straight from its TensorImpl instead (tensor_fields.h), falling
// back to the getters for what it cannot read.
//
// Only used with the GIL held. Errors are Python errors: each read returns false (or null) with one set.
#pragma once

#include <Python.h>

#include <cstdint>

#include "record/python/tensor_fields.h"

namespace traincheck {

class TensorReads {
 public:
  TensorReads() = default;
  TensorReads(const TensorReads&) = delete;
  TensorReads& operator=(const TensorReads&) = delete;
  ~TensorReads();

  // `tensor` and `parameter`: torch.Tensor and torch.nn.Parameter; `strided`: torch.strided. False with a
  // Python error set when TensorBase lacks one of the getters.
  bool init(PyObject* tensor, PyObject* parameter, PyObject* strided);

  // Whether `t` is exactly a torch.Tensor or torch.nn.Parameter (no subclass's own attributes to honour).
  bool plain(PyObject* t) const { return Py_TYPE(t) == tensor_ || Py_TYPE(t) == parameter_; }

  // The direct reads every TensorReads uses from now on (null: the getters only). `reader` lives as long
  // as the process (an extension module's static).
  static void set_field_reader(const TensorFieldReader* reader);
  static const TensorFieldReader* field_reader();

  // A plain tensor's fields and gradient (a new reference; Py_None for none) in one direct read, with
  // the gradient's fields when it has one; false when they are not read that way (not plain, no field
  // reader, or one it cannot read): the caller reads them one by one. `held`: a gradient TensorImpl the
  // caller holds (hold_impl), for which `grad` is set to null (TensorFieldReader::fields_and_grad).
  bool fields_and_grad(PyObject* t, TensorFields& out, PyObject*& grad, TensorFields& grad_out,
                       uint64_t held = 0) const;
  // Weak holds of TensorImpls read directly (TensorFieldReader::hold_impl); false when there is no reader.
  static bool hold_impl(uint64_t impl);
  static void release_impl(uint64_t impl);

  bool version(PyObject* t, int64_t& out) const;
  // Whether the tensor is strided (a sparse gradient is not: it has no data_ptr). A tensor object keeps
  // its layout for life (torch lets `.data =` swap only an implementation of the same kind), so callers
  // read it once per tensor object.
  bool strided(PyObject* t, bool& out) const;
  // The data address of a strided tensor.
  bool data_ptr(PyObject* t, uint64_t& out) const;
  // Whether the tensor's memory is the host's (t.is_cpu).
  bool is_cpu(PyObject* t, bool& out) const;
  // t.dtype: a new reference; null with an error set.
  PyObject* dtype(PyObject* t) const;
  bool numel(PyObject* t, int64_t& out) const;
  // t.is_contiguous(): its elements lie in order from data_ptr on, with no gaps.
  bool contiguous(PyObject* t, bool& out) const;
  // The address and size in bytes of t.untyped_storage(): the memory its elements may lie in (0 bytes
  // once the storage was resized to 0).
  bool storage_span(PyObject* t, uint64_t& start, uint64_t& nbytes) const;
  // t.grad: a new reference, Py_None included; null with an error set.
  PyObject* grad(PyObject* t) const;
  // t.requires_grad's truth value; -1 with an error set.
  int requires_grad(PyObject* t) const;

 private:
  PyObject* get(PyObject* t, const PyGetSetDef* getter, PyObject* name) const;
  // Reads a plain tensor's fields directly; false when they are not read that way.
  bool direct(PyObject* t, TensorFields& out) const;
  // t.<name>() through TensorBase's method descriptor `method` for a plain tensor.
  PyObject* call(PyObject* t, PyObject* method, PyObject* name) const;

  PyTypeObject* tensor_ = nullptr;     // strong
  PyTypeObject* parameter_ = nullptr;  // strong
  PyObject* strided_ = nullptr;        // strong
  const PyGetSetDef* version_ = nullptr;
  const PyGetSetDef* grad_ = nullptr;
  const PyGetSetDef* requires_grad_ = nullptr;
  const PyGetSetDef* layout_ = nullptr;
  const PyGetSetDef* is_cpu_ = nullptr;
  const PyGetSetDef* dtype_ = nullptr;
  PyObject* data_ptr_ = nullptr;  // TensorBase.data_ptr's method descriptor, strong
  PyCFunction data_ptr_noargs_ = nullptr;  // its C function, when it takes no arguments
  PyObject* numel_ = nullptr;          // TensorBase.numel's method descriptor, strong
  PyObject* is_contiguous_ = nullptr;  // TensorBase.is_contiguous's, strong
  PyObject* untyped_storage_ = nullptr;  // TensorBase.untyped_storage's, strong
  // interned: _version, grad, requires_grad, layout, is_cpu, dtype, data_ptr, numel, is_contiguous,
  // untyped_storage, nbytes
  PyObject* names_[11] = {};
};

// The first descriptor named `name` of type `kind` (a getset or method descriptor type) in `type`'s MRO:
// for torch.Tensor, TensorBase's own C getter or method, never a Python property or a wrapper that
// --instr-descriptors set on torch.Tensor. Borrowed; null when there is none (or with an error set).
PyObject* base_descriptor(PyTypeObject* type, PyObject* name, PyTypeObject* kind);

// The object `ref` (a weak reference) refers to, as a pointer only to compare with, never to use: null
// once it died (a dead reference is no tensor, and no None either).
inline PyObject* weak_referent(PyObject* ref) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* obj = nullptr;
  if (PyWeakref_GetRef(ref, &obj) <= 0) return nullptr;
  Py_DECREF(obj);  // the referent is alive while its holder keeps it; the pointer is only compared
  return obj;
#else
  PyObject* obj = PyWeakref_GetObject(ref);
  return obj == Py_None ? nullptr : obj;
#endif
}

}  // namespace traincheck
