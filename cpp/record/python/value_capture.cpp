#include "record/python/value_capture.h"

#include <string>
#include <unordered_map>

#include "record/python/clear_error.h"
#include "record/python/data_lifetimes.h"
#include "record/python/tensor_reads.h"
#include "record/recorder.h"

namespace traincheck {

namespace {

constexpr int kMaxDepth = 3;
constexpr Py_ssize_t kMaxElements = 64;  // longer containers end with a "..." marker
constexpr Py_ssize_t kMaxStringBytes = 4096;
constexpr int kMaxDims = kMaxTensorDims;

TorchTypes g_types;
// torch._C.TensorBase.data_ptr, the C method itself: a wrapper that --instr-descriptors sets on
// torch.Tensor is never called from here. Null before set_torch_types or where torch lacks it.
PyObject* g_data_ptr = nullptr;
PyObject* g_untyped_storage = nullptr;  // TensorBase.untyped_storage, likewise

// Caches keyed by objects that live as long as the process (types, dtype singletons). Only touched with
// the GIL held, so no lock.
std::unordered_map<PyTypeObject*, uint32_t>& type_names() {
  static auto* m = new std::unordered_map<PyTypeObject*, uint32_t>();
  return *m;
}
struct DtypeInfo {
  uint32_t name_id;
  uint32_t itemsize;
};
std::unordered_map<PyObject*, DtypeInfo>& dtype_infos() {
  static auto* m = new std::unordered_map<PyObject*, DtypeInfo>();
  return *m;
}
std::unordered_map<std::string, uint32_t>& text_ids() {
  static auto* m = new std::unordered_map<std::string, uint32_t>();
  return *m;
}

struct Names {
  PyObject* itemsize;
  PyObject* training;
};
const Names& names() {
  static const Names n = {PyUnicode_InternFromString("itemsize"), PyUnicode_InternFromString("training")};
  return n;
}

// The tensor attributes a summary reads. Each is read through TensorBase's own C getter, resolved once
// (set_torch_types), when the tensor's type is exactly torch.Tensor or nn.Parameter, which override none
// of them: the same getter attribute access would find, without its walk through the type's MRO, and
// never a wrapper that --instr-descriptors set on torch.Tensor. Any other type (a subclass, which may
// define its own) is read by ordinary attribute access.
enum TensorAttr {
  kDtype, kShape, kIsCuda, kIsCpu, kIsMeta, kIsSparse, kIsQuantized, kRequiresGrad, kIsLeaf, kRetainsGrad,
  kGrad, kGradFn, kTensorAttrCount
};
constexpr const char* kTensorAttrNames[kTensorAttrCount] = {
    "dtype",   "shape",        "is_cuda", "is_cpu",       "is_meta", "is_sparse",
    "is_quantized", "requires_grad", "is_leaf", "retains_grad", "grad", "grad_fn"};

struct TensorAttrs {
  PyObject* names[kTensorAttrCount] = {};            // interned
  const PyGetSetDef* getters[kTensorAttrCount] = {};  // null: read by attribute access
  bool all_resolved = false;                          // no getter is null
};
TensorAttrs& tensor_attrs() {
  static TensorAttrs* a = [] {
    auto* attrs = new TensorAttrs();  // never destroyed: used until exit
    for (int i = 0; i < kTensorAttrCount; ++i) attrs->names[i] = PyUnicode_InternFromString(kTensorAttrNames[i]);
    return attrs;
  }();
  return *a;
}

PyObject* tensor_attr(PyObject* t, TensorAttr which) {
  const TensorAttrs& a = tensor_attrs();
  const PyGetSetDef* getter = a.getters[which];
  if (getter != nullptr && (Py_TYPE(t) == g_types.tensor || Py_TYPE(t) == g_types.parameter))
    return getter->get(t, getter->closure);
  return PyObject_GetAttr(t, a.names[which]);
}

// Whether every attribute of `t` is read through torch's own getters: its type is exactly torch.Tensor or
// nn.Parameter and all of them were resolved.
bool reads_own_getters(PyObject* t) {
  return tensor_attrs().all_resolved && (Py_TYPE(t) == g_types.tensor || Py_TYPE(t) == g_types.parameter);
}

// The getset descriptor attribute access on `type` finds for `name`, or null when it finds anything
// else (a Python property, a wrapper) or nothing.
const PyGetSetDef* found_getter(PyTypeObject* type, PyObject* name) {
  PyObject* mro = type->tp_mro;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* dict = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_dict;
    PyObject* found = dict != nullptr ? PyDict_GetItemWithError(dict, name) : nullptr;
    if (found == nullptr) continue;
    return Py_IS_TYPE(found, &PyGetSetDescr_Type) ? reinterpret_cast<PyGetSetDescrObject*>(found)->d_getset : nullptr;
  }
  return nullptr;
}

// Resolves the getters for torch.Tensor and nn.Parameter: one only where both find the same.
void resolve_tensor_getters() {
  TensorAttrs& a = tensor_attrs();
  a.all_resolved = true;
  for (int i = 0; i < kTensorAttrCount; ++i) {
    const PyGetSetDef* g = g_types.tensor ? found_getter(g_types.tensor, a.names[i]) : nullptr;
    const bool same = g != nullptr && (g_types.parameter == nullptr || found_getter(g_types.parameter, a.names[i]) == g);
    a.getters[i] = same ? g : nullptr;
    a.all_resolved = a.all_resolved && same;
  }
  clear_error_keeping_stop_requests();  // a failed lookup leaves that attribute to ordinary access
}

uint32_t text_id(std::string_view text) {
  auto& m = text_ids();
  auto it = m.find(std::string(text));
  if (it != m.end()) return it->second;
  const uint32_t id = Recorder::instance().intern_name(text);
  m.emplace(std::string(text), id);
  return id;
}

std::string_view utf8(PyObject* str) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(str, &n);
  if (p == nullptr) {
    clear_error_keeping_stop_requests();
    return {};
  }
  return {p, static_cast<size_t>(n)};
}

// str(obj) as an interned id (dtype and device values).
uint32_t str_id(PyObject* obj) {
  PyObject* s = PyObject_Str(obj);
  if (s == nullptr) {
    clear_error_keeping_stop_requests();
    return StringTable::kInvalid;
  }
  const uint32_t id = text_id(utf8(s));
  Py_DECREF(s);
  return id;
}

// Returns the attribute's truth value; a missing attribute reads as false.
bool flag_attr(PyObject* obj, TensorAttr which) {
  PyObject* v = tensor_attr(obj, which);
  if (v == nullptr) {
    clear_error_keeping_stop_requests();
    return false;
  }
  const bool result = v == Py_True;
  Py_DECREF(v);
  return result;
}

const DtypeInfo* dtype_info(PyObject* dtype) {
  auto& m = dtype_infos();
  auto it = m.find(dtype);
  if (it != m.end()) return &it->second;
  DtypeInfo info{str_id(dtype), 0};
  if (PyObject* size = PyObject_GetAttr(dtype, names().itemsize)) {
    info.itemsize = static_cast<uint32_t>(PyLong_AsLong(size));
    Py_DECREF(size);
  }
  clear_error_keeping_stop_requests();
  Py_INCREF(dtype);  // dtypes are singletons; keep the key alive for the cache's life
  return &m.emplace(dtype, info).first->second;
}

}  // namespace

// A tensor's identity in records (_TRAINCHECK_data_ID): the address of its data paired with the lifetime
// of the storage there (record/python/data_lifetimes.h), rather than id(tensor). A temporary such as
// `p.data` is freed after the call, and the next one often gets the same Python id: `.data` views of
// different parameters looked like one tensor; their data addresses differ, and two views of
// one parameter share theirs. A tensor without an address (meta and sparse ones, `no_data`, are never
// asked; functorch wrappers: 0 or an error), or of a subclass with its own dispatch (fake, functional,
// DTensor: never asked), keeps id(tensor).
namespace {

// Whether tensors of this type have data of their own to address: torch.Tensor and Parameter, and
// subclasses that keep torch's dispatch. A subclass with its own __torch_dispatch__ (FakeTensor,
// FunctionalTensor, DTensor) has none, and FakeTensor.data_ptr() makes torch print a deprecation warning
// into the user's output (seen under FSDP2). Decided once per type; types are kept alive in the cache.
bool has_addressable_data(PyTypeObject* type) {
  if (type == g_types.tensor || type == g_types.parameter) return true;
  static auto* decided = new std::unordered_map<PyTypeObject*, bool>();  // never destroyed: used until exit
  if (auto it = decided->find(type); it != decided->end()) return it->second;
  bool own_dispatch = true;
  PyObject* mine = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__torch_dispatch__");
  PyObject* base = PyObject_GetAttrString(reinterpret_cast<PyObject*>(g_types.tensor), "__torch_dispatch__");
  if (mine != nullptr && base != nullptr) own_dispatch = mine != base;
  Py_XDECREF(mine);
  Py_XDECREF(base);
  clear_error_keeping_stop_requests();
  Py_INCREF(type);
  decided->emplace(type, !own_dispatch);
  return !own_dispatch;
}

}  // namespace

uint64_t data_identity(PyObject* t, bool no_data) {
  if (g_data_ptr == nullptr || no_data || !has_addressable_data(Py_TYPE(t))) return reinterpret_cast<uint64_t>(t);
  PyObject* ptr = PyObject_CallOneArg(g_data_ptr, t);
  if (ptr == nullptr) {
    clear_error_keeping_stop_requests();
    return reinterpret_cast<uint64_t>(t);
  }
  const unsigned long long address = PyLong_AsUnsignedLongLong(ptr);
  Py_DECREF(ptr);
  if (PyErr_Occurred() || address == 0) {
    clear_error_keeping_stop_requests();
    return reinterpret_cast<uint64_t>(t);
  }
  return data_lifetime_identity(t, static_cast<uint64_t>(address), g_untyped_storage);
}

void summarize_tensor(PyObject* t, TensorSummary& s, int64_t* dims) {
  s = TensorSummary{};
  if (PyObject* dtype = tensor_attr(t, kDtype)) {
    if (const DtypeInfo* info = dtype_info(dtype)) {
      s.dtype_name_id = info->name_id;
      s.itemsize = info->itemsize;
    }
    Py_DECREF(dtype);
  } else {
    clear_error_keeping_stop_requests();
  }
  if (PyObject* shape = tensor_attr(t, kShape)) {
    if (PyTuple_Check(shape)) {
      const Py_ssize_t nd = PyTuple_GET_SIZE(shape);
      s.ndim = static_cast<uint16_t>(nd < kMaxDims ? nd : kMaxDims);
      for (uint16_t i = 0; i < s.ndim; ++i) dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    }
    Py_DECREF(shape);
  }
  clear_error_keeping_stop_requests();
  uint16_t f = 0;
  if (Py_IS_TYPE(t, g_types.parameter) || (g_types.parameter && PyObject_TypeCheck(t, g_types.parameter))) {
    f |= kTensorIsParameter;
  }
  // A tensor read through torch's own getters lives on one device, and a leaf has no grad_fn and never
  // retains its grad: the reads those imply are skipped. A subclass may define them otherwise: all are read.
  const bool own = reads_own_getters(t);
  if (flag_attr(t, kIsCpu)) f |= kTensorIsCpu;
  if (!(own && (f & kTensorIsCpu)) && flag_attr(t, kIsCuda)) f |= kTensorIsCuda;
  if (!(own && (f & (kTensorIsCpu | kTensorIsCuda))) && flag_attr(t, kIsMeta)) f |= kTensorIsMeta;
  if (flag_attr(t, kIsSparse)) f |= kTensorIsSparse;
  if (flag_attr(t, kIsQuantized)) f |= kTensorIsQuantized;
  if (flag_attr(t, kRequiresGrad)) f |= kTensorRequiresGrad;
  if (flag_attr(t, kIsLeaf)) f |= kTensorIsLeaf;
  const bool own_leaf = own && (f & kTensorIsLeaf);
  if (!own_leaf && flag_attr(t, kRetainsGrad)) f |= kTensorRetainsGrad;
  // Reading .grad of a non-leaf tensor makes torch warn; such a tensor has no grad to report anyway.
  if (f & (kTensorIsLeaf | kTensorRetainsGrad)) {
    if (PyObject* grad = tensor_attr(t, kGrad)) {
      if (grad != Py_None) {
        f |= kTensorHasGrad;
        s.grad_id = data_identity(grad, f & kTensorIsMeta);  // torch keeps a grad on its tensor's device
      }
      Py_DECREF(grad);
    } else {
      clear_error_keeping_stop_requests();
    }
  }
  if (!own_leaf) {
    if (PyObject* fn = tensor_attr(t, kGradFn)) {
      if (fn != Py_None) f |= kTensorHasGradFn;
      Py_DECREF(fn);
    } else {
      clear_error_keeping_stop_requests();
    }
  }
  s.flags = f;
  // Sparse tensors have no single address; meta tensors none (a FakeTensor's inner tensor is one: asking
  // it makes torch warn).
  s.data_id = data_identity(t, f & (kTensorIsSparse | kTensorIsMeta));
}

bool is_tensor(PyObject* obj) { return g_types.tensor && PyObject_TypeCheck(obj, g_types.tensor); }

bool capture_user_attributes(PayloadEncoder& out, PyObject* obj) {
  PyObject** dict_ptr = _PyObject_GetDictPtr(obj);
  PyObject* dict = dict_ptr ? *dict_ptr : nullptr;
  if (dict == nullptr || !PyDict_Check(dict) || PyDict_GET_SIZE(dict) == 0) return false;
  const size_t at = out.begin_container(ValueTag::kDict);
  Py_ssize_t pos = 0;
  uint32_t count = 0;
  PyObject *key, *value;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) continue;
    const std::string_view name = utf8(key);
    // The original keeps public names and its own _TRAINCHECK_ ones; only primitive values.
    if (name.empty() || (name[0] == '_' && name.rfind("_TRAINCHECK", 0) != 0)) continue;
    if (!(value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
          PyUnicode_CheckExact(value))) {
      continue;
    }
    out.text(name);
    capture_value(out, value, 1);
    ++count;
  }
  out.end_container(at, count);
  return true;
}

namespace {

// A module's mode is what tells "the model was left in eval mode" apart: Module.__init__ puts `training`
// in the instance dict, so it is read from there without calling any descriptor or __getattr__. A
// module whose dict lacks a bool `training` is recorded as a plain object.
void capture_module(PayloadEncoder& out, PyObject* m) {
  PyObject** dict_ptr = _PyObject_GetDictPtr(m);
  PyObject* dict = dict_ptr ? *dict_ptr : nullptr;
  PyObject* training = dict && PyDict_Check(dict) ? PyDict_GetItemWithError(dict, names().training) : nullptr;
  if (training == nullptr || !PyBool_Check(training)) {
    clear_error_keeping_stop_requests();
    return out.object(type_name_id(Py_TYPE(m)));
  }
  out.module(type_name_id(Py_TYPE(m)), training == Py_True);
}

// The tensor object's own _TRAINCHECK_* attributes (the generate response lengths that
// annotate_answer_start_token_ids asks for), any value; null when it has none (almost every tensor: one
// pointer test).
PyObject* tool_attributes(PyObject* t) {
  PyObject** dict_ptr = _PyObject_GetDictPtr(t);
  PyObject* dict = dict_ptr ? *dict_ptr : nullptr;
  if (dict == nullptr || !PyDict_Check(dict) || PyDict_GET_SIZE(dict) == 0) return nullptr;
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (PyUnicode_Check(key) && utf8(key).starts_with("_TRAINCHECK")) return dict;
  }
  return nullptr;
}

void capture_tensor(PayloadEncoder& out, PyObject* t, int depth) {
  TensorSummary s;
  int64_t dims[kMaxDims];
  summarize_tensor(t, s, dims);
  PyObject* tool = tool_attributes(t);
  if (tool != nullptr) s.flags |= kTensorHasToolAttributes;
  out.tensor(s, dims);
  if (tool == nullptr) return;
  const size_t at = out.begin_container(ValueTag::kDict);
  Py_ssize_t pos = 0;
  uint32_t count = 0;
  PyObject *key, *value;
  while (PyDict_Next(tool, &pos, &key, &value)) {
    if (!PyUnicode_Check(key) || !utf8(key).starts_with("_TRAINCHECK")) continue;
    out.text(utf8(key));
    capture_value(out, value, depth + 1);
    ++count;
  }
  out.end_container(at, count);
}

template <class GetItem>
void capture_sequence(PayloadEncoder& out, ValueTag kind, Py_ssize_t size, GetItem item, int depth) {
  const size_t at = out.begin_container(kind);
  const Py_ssize_t kept = size < kMaxElements ? size : kMaxElements;
  for (Py_ssize_t i = 0; i < kept; ++i) capture_value(out, item(i), depth + 1);
  if (kept < size) out.truncated();
  out.end_container(at, static_cast<uint32_t>(kept + (kept < size ? 1 : 0)));
}

void capture_dict(PayloadEncoder& out, PyObject* dict, int depth) {
  const size_t at = out.begin_container(ValueTag::kDict);
  Py_ssize_t pos = 0, count = 0;
  PyObject *key, *value;
  while (count < kMaxElements && PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) continue;  // JSON object keys are strings
    out.text(utf8(key));
    capture_value(out, value, depth + 1);
    ++count;
  }
  out.end_container(at, static_cast<uint32_t>(count));
}

}  // namespace

// TensorBase's own C method `name` (base_descriptor), a new reference; null when there is none.
static PyObject* tensor_base_method(PyTypeObject* tensor, const char* name) {
  PyObject* key = PyUnicode_InternFromString(name);
  PyObject* found = key != nullptr ? base_descriptor(tensor, key, &PyMethodDescr_Type) : nullptr;
  Py_XDECREF(key);
  clear_error_keeping_stop_requests();  // a failed lookup leaves the method to ordinary calls
  return Py_XNewRef(found);
}

void set_torch_types(const TorchTypes& types) {
  g_types = types;
  Py_CLEAR(g_data_ptr);
  Py_CLEAR(g_untyped_storage);
  resolve_tensor_getters();
  if (types.tensor == nullptr) return;
  g_data_ptr = tensor_base_method(types.tensor, "data_ptr");
  g_untyped_storage = tensor_base_method(types.tensor, "untyped_storage");
}

uint32_t type_name_id(PyTypeObject* type) {
  auto& m = type_names();
  auto it = m.find(type);
  if (it != m.end()) return it->second;
  std::string name;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  PyObject* qualname = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__qualname__");
  if (module && PyUnicode_Check(module) && utf8(module) != "builtins") {
    name = utf8(module);
    name += '.';
  }
  name += qualname && PyUnicode_Check(qualname) ? std::string(utf8(qualname)) : std::string(type->tp_name);
  Py_XDECREF(module);
  Py_XDECREF(qualname);
  clear_error_keeping_stop_requests();
  const uint32_t id = Recorder::instance().intern_name(name);
  Py_INCREF(type);  // the cache outlives any class it names
  m.emplace(type, id);
  return id;
}

void capture_value(PayloadEncoder& out, PyObject* v, int depth) {
  if (v == Py_None) return out.none();
  if (PyBool_Check(v)) return out.boolean(v == Py_True);
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) return out.integer(x);
    PyObject* s = PyObject_Str(v);
    if (s) {
      out.big_integer(utf8(s));
      Py_DECREF(s);
      return;
    }
    clear_error_keeping_stop_requests();
    return out.object(type_name_id(Py_TYPE(v)));
  }
  if (PyFloat_CheckExact(v)) return out.real(PyFloat_AS_DOUBLE(v));
  if (PyUnicode_CheckExact(v)) {
    std::string_view s = utf8(v);
    return out.str(s.size() > kMaxStringBytes ? s.substr(0, kMaxStringBytes) : s);
  }
  if (g_types.tensor && PyObject_TypeCheck(v, g_types.tensor)) return capture_tensor(out, v, depth);
  if (depth < kMaxDepth) {
    if (PyList_CheckExact(v)) {
      return capture_sequence(out, ValueTag::kList, PyList_GET_SIZE(v),
                              [v](Py_ssize_t i) { return PyList_GET_ITEM(v, i); }, depth);
    }
    if (PyTuple_CheckExact(v)) {
      return capture_sequence(out, ValueTag::kTuple, PyTuple_GET_SIZE(v),
                              [v](Py_ssize_t i) { return PyTuple_GET_ITEM(v, i); }, depth);
    }
    if (PyDict_CheckExact(v)) return capture_dict(out, v, depth);
  }
  if ((g_types.dtype && Py_IS_TYPE(v, g_types.dtype))) {
    const DtypeInfo* info = dtype_info(v);
    return out.named_value(type_name_id(Py_TYPE(v)), info ? info->name_id : StringTable::kInvalid);
  }
  if (g_types.device && Py_IS_TYPE(v, g_types.device)) {
    return out.named_value(type_name_id(Py_TYPE(v)), str_id(v));
  }
  if (g_types.module && PyObject_TypeCheck(v, g_types.module)) return capture_module(out, v);
  out.object(type_name_id(Py_TYPE(v)));
}

namespace {

bool keyword_selected(const ArgumentFilter& filter, PyObject* name) {
  if (filter.keywords == nullptr) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(filter.keywords);
  for (Py_ssize_t i = 0; i < n; ++i) {  // interned on both sides as a rule: pointers compare first
    if (PyTuple_GET_ITEM(filter.keywords, i) == name) return true;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyUnicode_Compare(PyTuple_GET_ITEM(filter.keywords, i), name) == 0) return true;
  }
  clear_error_keeping_stop_requests();
  return false;
}

}  // namespace

void capture_arguments(PayloadEncoder& out, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                       const ArgumentFilter* filter) {
  out.section(SectionTag::kArgs);
  const size_t npos_at = out.begin_count();
  uint32_t npos = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (filter != nullptr && (i >= 64 || !(filter->positions >> i & 1u))) continue;
    out.position(static_cast<uint32_t>(i));
    capture_value(out, args[i]);
    ++npos;
  }
  out.end_container(npos_at, npos);
  const size_t nkw_at = out.begin_count();
  uint32_t nkw = 0;
  const Py_ssize_t nkwnames = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkwnames; ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    if (filter != nullptr && !keyword_selected(*filter, name)) continue;
    out.text(utf8(name));
    capture_value(out, args[nargs + i]);
    ++nkw;
  }
  out.end_container(nkw_at, nkw);
}

}  // namespace traincheck
