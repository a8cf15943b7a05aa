// traincheck._torch_fields: reads of a tensor's fields straight from its TensorImpl, for the model tracker's
// per-parameter work (record/python/tensor_fields.h says why and what each read answers). Built against
// the installed torch's headers and libraries, so it imports only under the torch it was built against:
// the module's init compares torch.__version__ and torch.version.git_version with the build's and raises
// ImportError otherwise (the tracker then reads through torch's getters). Plain CPython API: no C++ type
// crosses into _core, only the struct in the capsule `reader()` returns.
#include <Python.h>

#include <string_view>

#include <torch/csrc/autograd/python_variable.h>

#include "record/python/tensor_fields.h"

namespace {

using traincheck::TensorFields;

// Fills `out` from `impl` (requires_grad only with `with_requires_grad`); false when a field is not
// readable here.
bool read_impl(const c10::TensorImpl* impl, TensorFields* out, bool with_requires_grad = true) {
  const c10::VariableVersion& counter = impl->version_counter();
  if (!counter.enabled()) return false;  // an inference tensor: `_version` raises, through the getter
  out->version = counter.current_version();
  out->impl = reinterpret_cast<uintptr_t>(impl);
  out->strided = impl->layout() == c10::kStrided;
  // What t.data_ptr() gives, without materialising a copy-on-write storage (a read has no side effect);
  // data() throws where data_ptr raises (no storage, storage access forbidden): the caller's getter then
  // raises it.
  out->address = out->strided ? reinterpret_cast<uintptr_t>(impl->data()) : 0;
  out->requires_grad = with_requires_grad && impl->requires_grad();
  return true;
}

int fields(PyObject* t, TensorFields* out) noexcept {
  try {
    return read_impl(THPVariable_Unpack(t).unsafeGetTensorImpl(), out) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int fields_and_grad(PyObject* t, uint64_t held, TensorFields* out, PyObject** grad, TensorFields* grad_out) noexcept {
  try {
    const c10::TensorImpl* impl = THPVariable_Unpack(t).unsafeGetTensorImpl();
    if (!read_impl(impl, out)) return 0;
    // TensorImpl's own grad(): TensorBase::grad() would warn for a non-leaf, which the getter turns
    // into a Python warning in the user's program.
    const at::Tensor& g = impl->grad();
    if (g.defined() && !read_impl(g.unsafeGetTensorImpl(), grad_out, /*with_requires_grad=*/false)) return 0;
    if (g.defined() && held != 0 && grad_out->impl == held) {
      *grad = nullptr;  // the caller's: its Python object is the one it knows
      return 1;
    }
    PyObject* wrapped = THPVariable_Wrap(g);  // the gradient's own Python object (None when undefined)
    if (wrapped == nullptr) {
      PyErr_Clear();  // the getter reads it again and raises what applies
      return 0;
    }
    *grad = wrapped;
    return 1;
  } catch (...) {
    return 0;
  }
}

void hold_impl(uint64_t impl) {
  c10::raw::weak_intrusive_ptr::incref(reinterpret_cast<c10::TensorImpl*>(static_cast<uintptr_t>(impl)));
}

void release_impl(uint64_t impl) {
  c10::raw::weak_intrusive_ptr::decref(reinterpret_cast<c10::TensorImpl*>(static_cast<uintptr_t>(impl)));
}

const traincheck::TensorFieldReader kReader = {sizeof(traincheck::TensorFieldReader), fields, fields_and_grad,
                                               hold_impl, release_impl};

PyObject* reader(PyObject*, PyObject*) {
  return PyCapsule_New(const_cast<traincheck::TensorFieldReader*>(&kReader), traincheck::kTensorFieldsCapsule,
                       nullptr);
}

// fields(t) -> (version, address, strided, requires_grad, grad), as the reads give them, for the loader's
// check against torch's getters; None when they cannot read `t`.
PyObject* fields_of(PyObject*, PyObject* t) {
  if (!THPVariable_CheckExact(t)) {
    PyErr_SetString(PyExc_TypeError, "_torch_fields.fields: a torch.Tensor or torch.nn.Parameter");
    return nullptr;
  }
  TensorFields f, g;
  PyObject* grad = nullptr;
  if (fields_and_grad(t, 0, &f, &grad, &g) != 1) Py_RETURN_NONE;
  return Py_BuildValue("(LKNNN)", static_cast<long long>(f.version), static_cast<unsigned long long>(f.address),
                       PyBool_FromLong(f.strided), PyBool_FromLong(f.requires_grad), grad);
}

PyMethodDef kMethods[] = {
    {"reader", reader, METH_NOARGS,
     "A capsule holding the reads (record/python/tensor_fields.h), for _core.set_tensor_field_reader."},
    {"fields", fields_of, METH_O, "(version, address, strided, requires_grad, grad) of a plain tensor, or None."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_torch_fields",
    .m_doc = "Tensor fields read from TensorImpl, for the torch this was built against.",
    .m_size = -1,
    .m_methods = kMethods,
    .m_slots = nullptr,
    .m_traverse = nullptr,
    .m_clear = nullptr,
    .m_free = nullptr,
};

// `module.<path>` as text (str() of it); null with an error set.
PyObject* text_at(PyObject* module, const char* first, const char* second) {
  PyObject* v = PyObject_GetAttrString(module, first);
  if (v != nullptr && second != nullptr) Py_SETREF(v, PyObject_GetAttrString(v, second));
  if (v != nullptr) Py_SETREF(v, PyObject_Str(v));
  return v;
}

// Whether the torch imported now is the one this module was built against; false with ImportError set
// otherwise, whatever went wrong reading its version (the loader then keeps torch's getters).
bool same_torch() {
  PyObject* torch = PyImport_ImportModule("torch");
  PyObject* version = torch != nullptr ? text_at(torch, "__version__", nullptr) : nullptr;
  PyObject* git = version != nullptr ? text_at(torch, "version", "git_version") : nullptr;
  Py_XDECREF(torch);
  bool same = false;
  if (git == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_ImportError, "traincheck._torch_fields: cannot read the imported torch's version");
  } else {
    const char* version_text = PyUnicode_AsUTF8(version);
    const char* git_text = version_text != nullptr ? PyUnicode_AsUTF8(git) : nullptr;
    PyErr_Clear();  // text that is not UTF-8 is no version this module was built for
    same = git_text != nullptr && std::string_view(version_text) == TRAINCHECK_TORCH_VERSION &&
           std::string_view(git_text) == TRAINCHECK_TORCH_GIT_VERSION;
    if (!same)
      PyErr_Format(PyExc_ImportError,
                   "traincheck._torch_fields was built against torch %s (%s), not the torch imported: %U (%U)",
                   TRAINCHECK_TORCH_VERSION, TRAINCHECK_TORCH_GIT_VERSION, version, git);
  }
  Py_XDECREF(version);
  Py_XDECREF(git);
  return same;
}

}  // namespace

PyMODINIT_FUNC PyInit__torch_fields() {
  if (!same_torch()) return nullptr;
  return PyModule_Create(&kModule);
}
