#include "record/python/tensor_reads.h"

#include <structmember.h>

#include <atomic>

namespace traincheck {

namespace {

// Set once when the tracker loads traincheck._torch_fields; read by every TensorReads.
std::atomic<const TensorFieldReader*> g_field_reader{nullptr};
// The reader whose hold_impl held a TensorImpl, for its release.
std::atomic<const TensorFieldReader*> g_impl_holder{nullptr};

enum Name {
  kVersion, kGrad, kRequiresGrad, kLayout, kIsCpu, kDtype, kDataPtr, kNumel, kIsContiguous, kUntypedStorage, kNbytes,
  kNameCount
};
constexpr const char* kNames[kNameCount] = {"_version", "grad",          "requires_grad",   "layout",
                                            "is_cpu",   "dtype",         "data_ptr",        "numel",
                                            "is_contiguous", "untyped_storage", "nbytes"};

// The truth of a read's new reference `v`, which it releases: 1, 0, or -1 with an error set (v null
// included: the read failed).
int truth_of(PyObject* v) {
  if (v == nullptr) return -1;
  const int truth = PyObject_IsTrue(v);
  Py_DECREF(v);
  return truth;
}

}  // namespace

PyObject* base_descriptor(PyTypeObject* type, PyObject* name, PyTypeObject* kind) {
  PyObject* mro = type->tp_mro;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* dict = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_dict;
    PyObject* found = dict != nullptr ? PyDict_GetItemWithError(dict, name) : nullptr;
    if (found != nullptr && Py_IS_TYPE(found, kind)) return found;
  }
  return nullptr;
}

TensorReads::~TensorReads() {
  if (!Py_IsInitialized()) return;
  Py_XDECREF(tensor_);
  Py_XDECREF(parameter_);
  Py_XDECREF(strided_);
  Py_XDECREF(data_ptr_);
  Py_XDECREF(numel_);
  Py_XDECREF(is_contiguous_);
  Py_XDECREF(untyped_storage_);
  for (PyObject* n : names_) Py_XDECREF(n);
}

bool TensorReads::init(PyObject* tensor, PyObject* parameter, PyObject* strided) {
  if (!PyType_Check(tensor) || !PyType_Check(parameter)) {
    PyErr_SetString(PyExc_TypeError, "TensorReads: torch.Tensor and torch.nn.Parameter are types");
    return false;
  }
  tensor_ = reinterpret_cast<PyTypeObject*>(Py_NewRef(tensor));
  parameter_ = reinterpret_cast<PyTypeObject*>(Py_NewRef(parameter));
  strided_ = Py_NewRef(strided);
  for (int i = 0; i < kNameCount; ++i)
    if ((names_[i] = PyUnicode_InternFromString(kNames[i])) == nullptr) return false;
  const PyGetSetDef** getters[] = {&version_, &grad_, &requires_grad_, &layout_, &is_cpu_, &dtype_};
  for (int i = kVersion; i <= kDtype; ++i) {
    PyObject* d = base_descriptor(tensor_, names_[i], &PyGetSetDescr_Type);
    if (d == nullptr) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "TensorReads: torch.Tensor has no C getter %R", names_[i]);
      return false;
    }
    *getters[i] = reinterpret_cast<PyGetSetDescrObject*>(d)->d_getset;
  }
  PyObject** methods[] = {&data_ptr_, &numel_, &is_contiguous_, &untyped_storage_};
  for (int i = kDataPtr; i <= kUntypedStorage; ++i) {
    PyObject* d = base_descriptor(tensor_, names_[i], &PyMethodDescr_Type);
    if (d == nullptr) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "TensorReads: torch.Tensor has no C method %R", names_[i]);
      return false;
    }
    *methods[i - kDataPtr] = Py_NewRef(d);
  }
  const PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(data_ptr_)->d_method;
  if ((def->ml_flags & (METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL)) == METH_NOARGS)
    data_ptr_noargs_ = def->ml_meth;
  return true;
}

void TensorReads::set_field_reader(const TensorFieldReader* reader) {
  g_field_reader.store(reader, std::memory_order_release);
}

const TensorFieldReader* TensorReads::field_reader() { return g_field_reader.load(std::memory_order_acquire); }

bool TensorReads::direct(PyObject* t, TensorFields& out) const {
  const TensorFieldReader* reader = plain(t) ? field_reader() : nullptr;
  return reader != nullptr && reader->fields(t, &out) == 1;
}

bool TensorReads::fields_and_grad(PyObject* t, TensorFields& out, PyObject*& grad, TensorFields& grad_out,
                                  uint64_t held) const {
  const TensorFieldReader* reader = plain(t) ? field_reader() : nullptr;
  return reader != nullptr && reader->fields_and_grad(t, held, &out, &grad, &grad_out) == 1;
}

bool TensorReads::hold_impl(uint64_t impl) {
  const TensorFieldReader* reader = field_reader();
  if (reader == nullptr) return false;
  reader->hold_impl(impl);
  g_impl_holder.store(reader, std::memory_order_relaxed);
  return true;
}

void TensorReads::release_impl(uint64_t impl) {
  // The reader that held it: still loaded (an extension module stays for the process) if no longer installed.
  g_impl_holder.load(std::memory_order_relaxed)->release_impl(impl);
}

PyObject* TensorReads::get(PyObject* t, const PyGetSetDef* getter, PyObject* name) const {
  if (plain(t)) return getter->get(t, getter->closure);
  return PyObject_GetAttr(t, name);
}

bool TensorReads::version(PyObject* t, int64_t& out) const {
  if (TensorFields f; direct(t, f)) {
    out = f.version;
    return true;
  }
  PyObject* v = get(t, version_, names_[kVersion]);
  if (v == nullptr) return false;
  // The mask form converts without a byte-array round trip; a version counter is never negative.
  out = static_cast<int64_t>(PyLong_AsUnsignedLongLongMask(v));
  Py_DECREF(v);
  return !(out == -1 && PyErr_Occurred());
}

bool TensorReads::strided(PyObject* t, bool& out) const {
  if (TensorFields f; direct(t, f)) {
    out = f.strided;
    return true;
  }
  PyObject* layout = get(t, layout_, names_[kLayout]);
  if (layout == nullptr) return false;
  const int same = layout == strided_ ? 1 : PyObject_RichCompareBool(layout, strided_, Py_EQ);
  Py_DECREF(layout);
  out = same == 1;
  return same >= 0;
}

bool TensorReads::data_ptr(PyObject* t, uint64_t& out) const {
  if (TensorFields f; direct(t, f) && f.strided) {
    out = f.address;
    return true;
  }
  PyObject* v = plain(t) && data_ptr_noargs_ != nullptr ? data_ptr_noargs_(t, nullptr)
                : plain(t)                               ? PyObject_CallOneArg(data_ptr_, t)
                                                         : PyObject_CallMethodNoArgs(t, names_[kDataPtr]);
  if (v == nullptr) return false;
  out = PyLong_AsUnsignedLongLongMask(v);
  Py_DECREF(v);
  return !(out == static_cast<uint64_t>(-1) && PyErr_Occurred());
}

PyObject* TensorReads::call(PyObject* t, PyObject* method, PyObject* name) const {
  return plain(t) ? PyObject_CallOneArg(method, t) : PyObject_CallMethodNoArgs(t, name);
}

bool TensorReads::is_cpu(PyObject* t, bool& out) const {
  const int truth = truth_of(get(t, is_cpu_, names_[kIsCpu]));
  out = truth == 1;
  return truth >= 0;
}

PyObject* TensorReads::dtype(PyObject* t) const { return get(t, dtype_, names_[kDtype]); }

bool TensorReads::numel(PyObject* t, int64_t& out) const {
  PyObject* v = call(t, numel_, names_[kNumel]);
  if (v == nullptr) return false;
  out = PyLong_AsLongLong(v);
  Py_DECREF(v);
  return !(out == -1 && PyErr_Occurred());
}

bool TensorReads::contiguous(PyObject* t, bool& out) const {
  const int truth = truth_of(call(t, is_contiguous_, names_[kIsContiguous]));
  out = truth == 1;
  return truth >= 0;
}

bool TensorReads::storage_span(PyObject* t, uint64_t& start, uint64_t& nbytes) const {
  PyObject* storage = call(t, untyped_storage_, names_[kUntypedStorage]);
  if (storage == nullptr) return false;
  PyObject* base = PyObject_CallMethodNoArgs(storage, names_[kDataPtr]);
  PyObject* size = base != nullptr ? PyObject_CallMethodNoArgs(storage, names_[kNbytes]) : nullptr;
  Py_DECREF(storage);
  start = base != nullptr ? PyLong_AsUnsignedLongLongMask(base) : 0;
  nbytes = size != nullptr ? PyLong_AsUnsignedLongLongMask(size) : 0;
  Py_XDECREF(base);
  Py_XDECREF(size);
  return size != nullptr && !PyErr_Occurred();
}

PyObject* TensorReads::grad(PyObject* t) const {
  PyObject* g = nullptr;
  if (TensorFields f, gf; fields_and_grad(t, f, g, gf)) return g;
  return get(t, grad_, names_[kGrad]);
}

int TensorReads::requires_grad(PyObject* t) const {
  if (TensorFields f; direct(t, f)) return f.requires_grad;
  return truth_of(get(t, requires_grad_, names_[kRequiresGrad]));
}

}  // namespace traincheck
