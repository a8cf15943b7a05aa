#include "record/python/host_digests.h"

#include <cstdint>

#include "record/tensor_digest.h"

namespace traincheck {

HostDigests::~HostDigests() {
  if (!Py_IsInitialized()) return;
  Py_XDECREF(widths_);
  Py_XDECREF(int64_);
}

bool HostDigests::init(PyObject* tensor, PyObject* parameter, PyObject* strided, PyObject* widths, PyObject* int64) {
  if (!PyDict_Check(widths)) {
    PyErr_SetString(PyExc_TypeError, "HostDigests: widths is a dict {dtype: bytes}");
    return false;
  }
  widths_ = Py_NewRef(widths);
  int64_ = Py_NewRef(int64);
  return reads_.init(tensor, parameter, strided);
}

bool HostDigests::in_storage(PyObject* t, uint64_t data, uint64_t bytes, bool& out) const {
  out = false;
  uint64_t start = 0, capacity = 0;
  if (!reads_.storage_span(t, start, capacity)) return false;
  out = start != 0 && data >= start && data - start <= capacity && bytes <= capacity - (data - start);
  return true;
}

bool HostDigests::width(PyObject* t, int& out) const {
  out = 0;
  if (!reads_.plain(t)) return true;
  bool yes = false;
  if (!reads_.is_cpu(t, yes)) return false;
  if (!yes) return true;
  if (!reads_.strided(t, yes)) return false;
  if (!yes) return true;
  PyObject* dtype = reads_.dtype(t);
  if (dtype == nullptr) return false;
  PyObject* w = PyDict_GetItemWithError(widths_, dtype);  // borrowed
  Py_DECREF(dtype);
  if (w == nullptr) return !PyErr_Occurred();
  if (!reads_.contiguous(t, yes)) return false;
  if (!yes) return true;
  const long bytes = PyLong_AsLong(w);
  if (bytes == -1 && PyErr_Occurred()) return false;
  out = bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 ? static_cast<int>(bytes) : 0;
  return true;
}

PyObject* HostDigests::digests(PyObject* tensors, PyObject* table) const {
  if (!PyList_Check(tensors)) {
    PyErr_SetString(PyExc_TypeError, "HostDigests.digests: a list of tensors");
    return nullptr;
  }
  // The table: the weights every digest reads, in place.
  bool cpu = false, contiguous = false;
  int64_t period = 0;
  uint64_t weights = 0;
  PyObject* dtype = reads_.plain(table) ? reads_.dtype(table) : nullptr;
  const bool is_int64 = dtype == int64_;
  Py_XDECREF(dtype);
  if (PyErr_Occurred()) return nullptr;
  if (!is_int64 || !reads_.is_cpu(table, cpu) || !reads_.contiguous(table, contiguous) ||
      !reads_.numel(table, period) || !reads_.data_ptr(table, weights) || !cpu || !contiguous || period <= 0) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "HostDigests.digests: the table is a non-empty contiguous int64 CPU tensor");
    return nullptr;
  }
  const Py_ssize_t n = PyList_GET_SIZE(tensors);
  PyObject* values = PyList_New(n);
  PyObject* rest = values != nullptr ? PyList_New(0) : nullptr;
  bool ok = rest != nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!ok) {
      if (values != nullptr) PyList_SET_ITEM(values, i, Py_NewRef(Py_None));
      continue;
    }
    PyObject* t = PyList_GET_ITEM(tensors, i);
    int bytes = 0;
    int64_t count = 0;
    uint64_t data = 0;
    bool readable = false;
    ok = width(t, bytes) &&
         (bytes == 0 || (reads_.numel(t, count) &&
                         (count == 0 || (reads_.data_ptr(t, data) &&
                                         in_storage(t, data, static_cast<uint64_t>(count) * bytes, readable)))));
    int64_t digest = 0;
    if (ok && bytes != 0 && count > 0 && readable)
      digest = full_digest(reinterpret_cast<const void*>(data), count, bytes, reinterpret_cast<const int64_t*>(weights), period);
    PyObject* value = ok ? PyLong_FromLongLong(digest) : nullptr;
    if (value == nullptr) {
      ok = false;
      PyList_SET_ITEM(values, i, Py_NewRef(Py_None));
      continue;
    }
    PyList_SET_ITEM(values, i, value);
    if (bytes == 0) {
      PyObject* index = PyLong_FromSsize_t(i);
      ok = index != nullptr && PyList_Append(rest, index) == 0;
      Py_XDECREF(index);
    }
  }
  PyObject* out = ok ? PyTuple_Pack(2, values, rest) : nullptr;
  Py_XDECREF(values);
  Py_XDECREF(rest);
  return out;
}

}  // namespace traincheck
