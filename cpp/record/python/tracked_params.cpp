#include "record/python/tracked_params.h"

namespace traincheck {

namespace {

void set_ref(PyObject*& slot, PyObject* value) {
  Py_XINCREF(value);
  Py_XSETREF(slot, value);
}

}  // namespace

bool TrackedParams::init(PyObject* tensor, PyObject* parameter, PyObject* strided, PyObject* local) {
  if (!reads_.init(tensor, parameter, strided)) return false;
  local_ = Py_NewRef(local);
  parameters_name_ = PyUnicode_InternFromString("_parameters");
  training_name_ = PyUnicode_InternFromString("training");
  return parameters_name_ != nullptr && training_name_ != nullptr;
}

TrackedParams::~TrackedParams() {
  if (!Py_IsInitialized()) return;
  for (TrackedParam& s : slots_) free_slot(s);
  Py_XDECREF(local_);
  Py_XDECREF(parameters_name_);
  Py_XDECREF(training_name_);
}

void TrackedParams::free_slot(TrackedParam& s) {
  if (s.param == nullptr) return;
  for (OptimizerHistory& h : s.history) {
    Py_XDECREF(h.grad_ref);
    Py_XDECREF(h.first_sight);
  }
  Py_CLEAR(s.param);
  Py_XDECREF(s.attr);
  Py_XDECREF(s.grad_ref);
  Py_XDECREF(s.data_digest);
  Py_XDECREF(s.grad_digest);
  Py_XDECREF(s.clip_ref);
  s = TrackedParam{};
}

long TrackedParams::add(PyObject* param, PyObject* owner, PyObject* attr, PyObject* model, uint32_t name_id,
                        bool sharded) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  TrackedParam& s = slots_[index];
  if (!sharded && !reads_.strided(param, s.data_strided)) {
    free_.push_back(index);
    return -1;
  }
  s.param = Py_NewRef(param);
  s.owner = owner == Py_None ? nullptr : owner;
  s.attr = Py_NewRef(attr);
  s.model = model == Py_None ? nullptr : model;
  s.name_id = name_id;
  s.sharded = sharded;
  s.data_digest = Py_NewRef(Py_None);
  s.grad_digest = Py_NewRef(Py_None);
  return index;
}

bool TrackedParams::slot_list(PyObject* list, std::vector<uint32_t>& out) const {
  if (!PyList_Check(list)) {
    PyErr_SetString(PyExc_TypeError, "TrackedParams: slots are a list of ints");
    return false;
  }
  out.clear();
  out.reserve(PyList_GET_SIZE(list));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
    const long slot = PyLong_AsLong(PyList_GET_ITEM(list, i));
    if (slot == -1 && PyErr_Occurred()) return false;
    if (!valid(slot)) {
      PyErr_Format(PyExc_IndexError, "TrackedParams: %ld is no tracked slot", slot);
      return false;
    }
    out.push_back(static_cast<uint32_t>(slot));
  }
  return true;
}

bool TrackedParams::set_order(PyObject* slots) {
  std::vector<uint32_t> order;
  if (!slot_list(slots, order)) return false;
  std::vector<bool> kept(slots_.size(), false);
  for (uint32_t i : order) kept[i] = true;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (kept[i] || slots_[i].param == nullptr) continue;
    free_slot(slots_[i]);
    free_.push_back(i);
  }
  order_ = std::move(order);
  by_param_.clear();
  by_param_.reserve(order_.size());
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {  // first in order ends up first in the chain
    auto [at, inserted] = by_param_.try_emplace(slots_[*it].param, *it);
    slots_[*it].next_same = inserted ? UINT32_MAX : at->second;
    at->second = *it;
  }
  written_.clear();
  looked_.clear();
  return true;
}

PyObject* TrackedParams::replaced() {
  PyObject* out = PyList_New(0);
  if (out == nullptr) return nullptr;
  PyObject* owner = nullptr;  // consecutive slots of one module read its _parameters once
  PyObject* parameters = nullptr;
  for (uint32_t i : order_) {
    const TrackedParam& s = slots_[i];
    if (s.owner == nullptr) continue;
    if (s.owner != owner) {
      Py_XDECREF(parameters);
      owner = s.owner;
      parameters = PyObject_GetAttr(owner, parameters_name_);
      if (parameters == nullptr) goto error;
    }
    {
      PyObject* now = PyDict_Check(parameters) ? PyDict_GetItemWithError(parameters, s.attr)
                                               : PyObject_CallMethod(parameters, "get", "O", s.attr);
      if (now == nullptr && PyErr_Occurred()) goto error;
      if (!PyDict_Check(parameters)) Py_XDECREF(now);  // only compared
      if (now != s.param) {
        PyObject* index = PyLong_FromUnsignedLong(i);
        if (index == nullptr || PyList_Append(out, index) < 0) {
          Py_XDECREF(index);
          goto error;
        }
        Py_DECREF(index);
      }
    }
  }
  Py_XDECREF(parameters);
  return out;
error:
  Py_XDECREF(parameters);
  Py_DECREF(out);
  return nullptr;
}

PyObject* TrackedParams::unwritten(PyObject* slots) {
  std::vector<uint32_t> list;
  if (!slot_list(slots, list)) return nullptr;
  PyObject* out = PyList_New(0);
  for (uint32_t i : list) {
    if (slots_[i].has_signature) continue;
    PyObject* index = PyLong_FromUnsignedLong(i);
    if (index == nullptr || PyList_Append(out, index) < 0) {
      Py_XDECREF(index);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(index);
  }
  return out;
}

PyObject* TrackedParams::local(const TrackedParam& s, PyObject* t) const {
  if (!s.sharded) return Py_NewRef(t);
  return PyObject_CallOneArg(local_, t);
}

// The data address of `t` (a slot's shard or gradient); 0 for one that is not strided (a sparse gradient:
// data_ptr raises there, and the user's training must run as without the tool). `strided`: whether it is,
// when known (nullptr: read it).
bool TrackedParams::address(PyObject* t, const bool* strided, bool& is_strided, uint64_t& out) const {
  if (strided != nullptr) {
    is_strided = *strided;
  } else if (!reads_.strided(t, is_strided)) {
    return false;
  }
  out = 0;
  return !is_strided || reads_.data_ptr(t, out);
}

// One slot of a write (the signature, change detection and digest refresh the tracker did in Python).
bool TrackedParams::look(uint32_t index, std::vector<PyObject*>& tensors, std::vector<long>& codes,
                         bool& changed) {
  TrackedParam& s = slots_[index];
  int64_t data_version = 0, grad_version = 0;
  uint64_t data_address = 0, grad_address = 0;
  bool strided = false;
  // A DTensor's in-place updates bump its own version counter, not its local shard's: versions are read
  // on the tensor itself, addresses on the shard (whose object may change, so its layout is read anew).
  if (!reads_.version(s.param, data_version)) return false;
  {
    PyObject* data = local(s, s.param);
    if (data == nullptr) return false;
    const bool ok = address(data, s.sharded ? nullptr : &s.data_strided, strided, data_address);
    Py_DECREF(data);
    if (!ok) return false;
  }
  PyObject* g = reads_.grad(s.param);
  if (g == nullptr) return false;
  const bool has_grad = g != Py_None;
  const bool new_grad = s.grad_ref == nullptr ? has_grad : !has_grad || weak_referent(s.grad_ref) != g;
  PyObject* g_local = nullptr;
  if (has_grad) {
    g_local = local(s, g);
    const bool known = !new_grad && !s.sharded;  // the gradient digested last: its layout is known
    if (g_local == nullptr || !reads_.version(g, grad_version) ||
        !address(g_local, known ? &s.grad_strided : nullptr, strided, grad_address)) {
      Py_XDECREF(g_local);
      Py_DECREF(g);
      return false;
    }
    s.grad_strided = strided;
  }
  const bool same_data = s.has_signature && s.data_known && s.data_version == data_version &&
                         s.data_address == data_address;
  const bool same_grad = s.has_signature && s.grad_present == has_grad &&
                         (!has_grad || (s.grad_version == grad_version && s.grad_address == grad_address));
  changed = new_grad || !same_data || !same_grad;
  s.grad_changed = changed && (new_grad || !same_grad);
  bool ok = true;
  if (changed) {
    if (!same_data) {
      PyObject* data = local(s, s.param);
      if (data == nullptr) {
        ok = false;
      } else {
        tensors.push_back(data);
        codes.push_back(static_cast<long>(index) * 2);
      }
    }
    s.has_signature = s.data_known = true;
    s.data_version = data_version;
    s.data_address = data_address;
    s.grad_present = has_grad;
    s.grad_version = grad_version;
    s.grad_address = grad_address;
    if (!has_grad) {
      set_ref(s.grad_digest, Py_None);
      Py_CLEAR(s.grad_ref);
    } else if (new_grad || !same_grad) {
      PyObject* ref = PyWeakref_NewRef(g, nullptr);
      if (ref == nullptr) {
        ok = false;
      } else {
        Py_XSETREF(s.grad_ref, ref);
        tensors.push_back(Py_NewRef(g_local));
        codes.push_back(static_cast<long>(index) * 2 + 1);
      }
    }
  }
  Py_XDECREF(g_local);
  Py_DECREF(g);
  return ok;
}

PyObject* TrackedParams::detect(PyObject* slots, bool only_changed) {
  if (slots == Py_None) {
    looked_ = order_;
  } else if (!slot_list(slots, looked_)) {
    return nullptr;
  }
  written_.clear();
  std::vector<PyObject*> tensors;
  std::vector<long> codes;
  bool ok = true;
  for (uint32_t i : looked_) {
    bool changed = false;
    if (!look(i, tensors, codes, changed)) {
      ok = false;
      break;
    }
    if (changed || !only_changed) written_.push_back(i);
  }
  PyObject* tensor_list = ok ? PyList_New(static_cast<Py_ssize_t>(tensors.size())) : nullptr;
  PyObject* code_list = tensor_list != nullptr ? PyList_New(static_cast<Py_ssize_t>(codes.size())) : nullptr;
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (code_list == nullptr) {
      Py_DECREF(tensors[k]);
      continue;
    }
    PyList_SET_ITEM(tensor_list, k, tensors[k]);
    PyList_SET_ITEM(code_list, k, PyLong_FromLong(codes[k]));
  }
  if (code_list == nullptr) {
    Py_XDECREF(tensor_list);
    return nullptr;
  }
  PyObject* out = PyTuple_Pack(2, tensor_list, code_list);
  Py_DECREF(tensor_list);
  Py_DECREF(code_list);
  return out;
}

PyObject* TrackedParams::written_lists() {
  if (written_.empty()) Py_RETURN_NONE;
  const auto n = static_cast<Py_ssize_t>(written_.size());
  PyObject* lists[4] = {PyList_New(n), PyList_New(n), PyList_New(n), PyList_New(n)};
  bool ok = lists[0] && lists[1] && lists[2] && lists[3];
  for (Py_ssize_t k = 0; ok && k < n; ++k) {
    const TrackedParam& s = slots_[written_[k]];
    PyObject* name = PyLong_FromUnsignedLong(s.name_id);
    PyObject* tensor = local(s, s.param);
    ok = name != nullptr && tensor != nullptr;
    PyList_SET_ITEM(lists[0], k, name ? name : Py_NewRef(Py_None));
    PyList_SET_ITEM(lists[1], k, tensor ? tensor : Py_NewRef(Py_None));
    PyList_SET_ITEM(lists[2], k, Py_NewRef(s.data_digest));
    PyList_SET_ITEM(lists[3], k, Py_NewRef(s.grad_digest));
  }
  PyObject* out = ok ? PyTuple_Pack(4, lists[0], lists[1], lists[2], lists[3]) : nullptr;
  for (PyObject* l : lists) Py_XDECREF(l);
  return out;
}

PyObject* TrackedParams::written_slots() {
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(written_.size()));
  if (out == nullptr) return nullptr;
  for (size_t k = 0; k < written_.size(); ++k) PyList_SET_ITEM(out, k, PyLong_FromUnsignedLong(written_[k]));
  return out;
}

void TrackedParams::after_write(GradEffect effect) {
  for (uint32_t i : looked_) {
    TrackedParam& s = slots_[i];
    if (!s.grad_changed || s.param == nullptr) continue;
    switch (effect) {
      case GradEffect::kNone:
        break;
      case GradEffect::kComputed:
        if (s.grad_ref != nullptr) s.grad_since_reset = true;
        break;
      case GradEffect::kReset:
        ++s.resets;
        s.discards += s.grad_since_reset;
        s.grad_since_reset = false;
        break;
      case GradEffect::kClipped:
        if (s.grad_ref != nullptr) {
          ++s.clips;
          set_ref(s.clip_ref, s.grad_ref);
          s.clip_version = s.grad_version;  // the version just read: the gradient as the clipping left it
        }
        break;
    }
  }
  looked_.clear();
}

template <typename Fn>
bool TrackedParams::for_each_slot_of(PyObject* param_lists, const char* what, Fn&& fn) {
  PyObject* outer = PySequence_Fast(param_lists, what);
  if (outer == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(outer); ++i) {
    PyObject* inner = PySequence_Fast(PySequence_Fast_GET_ITEM(outer, i), what);
    if (inner == nullptr) {
      Py_DECREF(outer);
      return false;
    }
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(inner); ++k) {
      auto it = by_param_.find(PySequence_Fast_GET_ITEM(inner, k));
      for (uint32_t s = it == by_param_.end() ? UINT32_MAX : it->second; s != UINT32_MAX; s = slots_[s].next_same)
        fn(slots_[s]);
    }
    Py_DECREF(inner);
  }
  Py_DECREF(outer);
  return true;
}

bool TrackedParams::forget_data(PyObject* param_lists) {
  return for_each_slot_of(param_lists, "TrackedParams.forget_data: a list of parameter lists",
                          [](TrackedParam& s) { s.data_known = false; });
}

void TrackedParams::forget_all_data() {
  for (uint32_t index : order_) slots_[index].data_known = false;
}

bool TrackedParams::forget_grads(PyObject* param_lists) {
  return for_each_slot_of(param_lists, "TrackedParams.forget_grads: a list of parameter lists", [](TrackedParam& s) {
    s.grad_version = -1;   // no version reads -1: the next write digests the gradient again
    s.clip_version = -1;   // nor is it the gradient the last clipping left any more
  });
}

PyObject* TrackedParams::digest(long code) {
  if (!valid(code / 2)) Py_RETURN_NONE;  // a slot freed since its digest was asked: it holds none
  const TrackedParam& s = slots_[code / 2];
  return Py_NewRef(code % 2 ? s.grad_digest : s.data_digest);
}

bool TrackedParams::set_digest(long code, PyObject* value) {
  if (!valid(code / 2)) return true;  // a slot freed since its digest was asked: nothing holds it any more
  TrackedParam& s = slots_[code / 2];
  set_ref(code % 2 ? s.grad_digest : s.data_digest, value);
  return true;
}

bool TrackedParams::set_digests(PyObject* codes, PyObject* values) {
  if (!PyList_Check(codes) || !PyList_Check(values) || PyList_GET_SIZE(codes) != PyList_GET_SIZE(values)) {
    PyErr_SetString(PyExc_TypeError, "TrackedParams.set_digests: two lists of one length");
    return false;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(codes); ++i) {
    const long code = PyLong_AsLong(PyList_GET_ITEM(codes, i));
    if (code == -1 && PyErr_Occurred()) return false;
    set_digest(code, PyList_GET_ITEM(values, i));
  }
  return true;
}

}  // namespace traincheck
