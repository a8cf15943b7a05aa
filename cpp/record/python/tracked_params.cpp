#include "record/python/tracked_params.h"

namespace traincheck {

namespace {

void set_ref(PyObject*& slot, PyObject* value) {
  Py_XINCREF(value);
  Py_XSETREF(slot, value);
}

// A dict's version tag (PEP 509): it changes whenever the dict is modified, so a module's _parameters
// whose tag is the one seen last still holds what it held. 0 where the interpreter has none to read (no
// shortcut: every slot is looked up).
uint64_t dict_version(PyObject* dict) {
#if PY_VERSION_HEX < 0x030E0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return PyDict_Check(dict) ? reinterpret_cast<PyDictObject*>(dict)->ma_version_tag : 0;
#pragma GCC diagnostic pop
#else
  return 0;
#endif
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
  for (uint32_t i = 0; i < slots_.size(); ++i) free_slot(i);
  forget_listed();
  Py_XDECREF(local_);
  Py_XDECREF(parameters_name_);
  Py_XDECREF(training_name_);
}

void TrackedParams::free_slot(uint32_t index) {
  TrackedParam& s = slots_[index];
  if (s.param == nullptr) return;
  ParamBookkeeping& b = books_[index];
  b.history.for_each([](OptimizerHistory& h) {
    Py_XDECREF(h.grad_ref);
    Py_XDECREF(h.first_sight);
  });
  Py_XDECREF(b.clip_ref);
  b = ParamBookkeeping{};
  Py_CLEAR(s.param);
  Py_XDECREF(s.attr);
  Py_XDECREF(s.name);
  Py_XDECREF(s.grad_ref);
  if (s.grad_impl != 0) TensorReads::release_impl(s.grad_impl);
  Py_XDECREF(s.data_digest);
  Py_XDECREF(s.grad_digest);
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
    books_.emplace_back();
  }
  TrackedParam& s = slots_[index];
  PyObject* name = PyLong_FromUnsignedLong(name_id);
  if (name == nullptr || (!sharded && !reads_.strided(param, s.data_strided))) {
    Py_XDECREF(name);
    free_.push_back(index);
    return -1;
  }
  s.name = name;
  s.param = Py_NewRef(param);
  s.owner = owner == Py_None ? nullptr : owner;
  s.attr = Py_NewRef(attr);
  books_[index].model = model == Py_None ? nullptr : model;
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
    free_slot(i);
    free_.push_back(i);
  }
  order_ = std::move(order);
  by_param_.clear();
  by_param_.reserve(order_.size());
  held_by_.clear();
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {  // first in order ends up first in the chain
    auto [at, inserted] = by_param_.try_emplace(slots_[*it].param, *it);
    books_[*it].next_same = inserted ? UINT32_MAX : at->second;
    at->second = *it;
  }
  written_.clear();
  grad_changed_.clear();
  forget_listed();  // their slots may hold other parameters from now on
  return true;
}

PyObject* TrackedParams::replaced() {
  PyObject* out = PyList_New(0);
  if (out == nullptr) return nullptr;
  PyObject* owner = nullptr;  // consecutive slots of one module read its _parameters once
  PyObject* parameters = nullptr;
  uint64_t version = 0;
  for (uint32_t i : order_) {
    TrackedParam& s = slots_[i];
    if (s.owner == nullptr) continue;
    if (s.owner != owner) {
      Py_XDECREF(parameters);
      owner = s.owner;
      parameters = PyObject_GetAttr(owner, parameters_name_);
      if (parameters == nullptr) goto error;
      version = dict_version(parameters);
    }
    if (version != 0 && s.owner_version == version) continue;  // unchanged since it held the parameter
    {
      PyObject* now = PyDict_Check(parameters) ? PyDict_GetItemWithError(parameters, s.attr)
                                               : PyObject_CallMethod(parameters, "get", "O", s.attr);
      if (now == nullptr && PyErr_Occurred()) goto error;
      if (!PyDict_Check(parameters)) Py_XDECREF(now);  // only compared
      s.owner_version = now == s.param ? version : 0;
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

PyObject* TrackedParams::sharded_local(PyObject* t) const { return PyObject_CallOneArg(local_, t); }

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

// A slot's signature as a write reads it: versions and data addresses of the parameter and its gradient.
struct TrackedParams::Signature {
  int64_t data_version = 0;
  uint64_t data_address = 0;
  PyObject* grad = nullptr;        // new reference, Py_None included; null with same_grad_object
  PyObject* grad_shard = nullptr;  // a sharded slot's: the gradient's local shard, new reference
  bool same_grad_object = false;   // the gradient is the slot's held one, unchanged (grad not looked up)
  int64_t grad_version = 0;
  uint64_t grad_address = 0;
  uint64_t grad_impl = 0;  // read directly: the gradient's TensorImpl
  bool grad_strided = false;

  bool has_grad() const { return same_grad_object || grad != Py_None; }
  // The gradient as digested: its shard for a sharded slot (borrowed).
  PyObject* grad_local() const { return grad_shard != nullptr ? grad_shard : grad; }
  ~Signature() {
    Py_XDECREF(grad_shard);
    Py_XDECREF(grad);
  }
};

// One direct read of a slot's signature; false when it is not read that way.
bool TrackedParams::read_directly(TrackedParam& s, Signature& sig) const {
  TensorFields data, grad;
  if (s.sharded || !reads_.fields_and_grad(s.param, data, sig.grad, grad, s.grad_impl)) return false;
  if (sig.grad == nullptr) {  // the gradient held: the same tensor, its Python object not looked up
    const uint64_t address = grad.strided ? grad.address : 0;
    sig.same_grad_object = s.grad_present && grad.version == s.grad_version && address == s.grad_address;
    // Changed in place since: its Python object is needed to digest it.
    if (!sig.same_grad_object && !reads_.fields_and_grad(s.param, data, sig.grad, grad)) return false;
  }
  s.requires_grad = data.requires_grad;  // for this write's claims
  sig.data_version = data.version;
  sig.data_address = data.strided ? data.address : 0;
  if (sig.has_grad()) {
    sig.grad_version = grad.version;
    sig.grad_address = grad.strided ? grad.address : 0;
    sig.grad_strided = grad.strided;
    sig.grad_impl = grad.impl;
  }
  return true;
}

bool TrackedParams::read_signature(TrackedParam& s, Signature& sig) const {
  s.requires_grad = -1;
  if (read_directly(s, sig)) return true;
  // A DTensor's in-place updates bump its own version counter, not its local shard's: versions are read
  // on the tensor itself, addresses on the shard (whose object may change, so its layout is read anew).
  bool strided = false;
  if (!reads_.version(s.param, sig.data_version)) return false;
  {
    PyObject* data = local(s, s.param);
    if (data == nullptr) return false;
    const bool ok = address(data, s.sharded ? nullptr : &s.data_strided, strided, sig.data_address);
    Py_DECREF(data);
    if (!ok) return false;
  }
  if ((sig.grad = reads_.grad(s.param)) == nullptr) return false;
  if (sig.grad == Py_None) return true;
  // The gradient digested last has the layout read then; a new one is read.
  const bool known = !s.sharded && s.grad_ref != nullptr && weak_referent(s.grad_ref) == sig.grad;
  if (s.sharded && (sig.grad_shard = sharded_local(sig.grad)) == nullptr) return false;
  if (!reads_.version(sig.grad, sig.grad_version)) return false;
  return address(sig.grad_local(), known ? &s.grad_strided : nullptr, sig.grad_strided, sig.grad_address);
}

// Holds `impl` (0: none) as the slot's gradient TensorImpl in place of the one it held.
void TrackedParams::hold_grad_impl(TrackedParam& s, uint64_t impl) const {
  if (impl == s.grad_impl) return;
  if (s.grad_impl != 0) TensorReads::release_impl(s.grad_impl);
  s.grad_impl = impl != 0 && TensorReads::hold_impl(impl) ? impl : 0;
}

// One slot of a write (the signature, change detection and digest refresh the tracker did in Python).
bool TrackedParams::look(uint32_t index, std::vector<PyObject*>& tensors, std::vector<long>& codes,
                         bool& changed) {
  TrackedParam& s = slots_[index];
  Signature sig;
  if (!read_signature(s, sig)) return false;
  const bool has_grad = sig.has_grad();
  const bool new_grad = sig.same_grad_object ? false
                        : s.grad_ref == nullptr ? has_grad
                                                : !has_grad || weak_referent(s.grad_ref) != sig.grad;
  if (has_grad) s.grad_strided = sig.grad_strided;
  const bool same_data = s.has_signature && s.data_known && s.data_version == sig.data_version &&
                         s.data_address == sig.data_address;
  const bool same_grad =
      s.has_signature && s.grad_present == has_grad &&
      (!has_grad || (s.grad_version == sig.grad_version && s.grad_address == sig.grad_address));
  changed = new_grad || !same_data || !same_grad;
  if (changed && (new_grad || !same_grad)) grad_changed_.push_back(index);
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
    s.data_version = sig.data_version;
    s.data_address = sig.data_address;
    s.grad_present = has_grad;
    s.grad_version = sig.grad_version;
    s.grad_address = sig.grad_address;
    if (!has_grad) {
      set_ref(s.grad_digest, Py_None);
      Py_CLEAR(s.grad_ref);
      hold_grad_impl(s, 0);
    } else if (new_grad || !same_grad) {  // sig.grad is read: not the same object unchanged
      PyObject* ref = PyWeakref_NewRef(sig.grad, nullptr);
      if (ref == nullptr) {
        ok = false;
      } else {
        Py_XSETREF(s.grad_ref, ref);
        hold_grad_impl(s, sig.grad_impl);
        tensors.push_back(Py_NewRef(sig.grad_local()));
        codes.push_back(static_cast<long>(index) * 2 + 1);
      }
    }
  }
  return ok;
}

PyObject* TrackedParams::detect(PyObject* slots, bool only_changed) {
  if (slots != Py_None && !slot_list(slots, given_slots_)) return nullptr;
  const std::vector<uint32_t>& looked = slots == Py_None ? order_ : given_slots_;
  written_.clear();
  grad_changed_.clear();
  std::vector<PyObject*> tensors;
  std::vector<long> codes;
  bool ok = true;
  for (uint32_t i : looked) {
    bool changed = false;
    if (!look(i, tensors, codes, changed)) {
      ok = false;
      break;
    }
    if (changed || !only_changed) written_.push_back(i);
  }
  PyObject* tensor_list = ok ? new_value_list(static_cast<Py_ssize_t>(tensors.size())) : nullptr;
  PyObject* code_list = tensor_list != nullptr ? new_value_list(static_cast<Py_ssize_t>(codes.size())) : nullptr;
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

// The names and tensors lists of the remembered write: kept and handed out again while each write is of
// the same slots (every step of a run writes the same parameters), not built anew; they hold nothing that
// changes while the slots stay, and no one changes them once handed out. A sharded slot's tensor is its
// shard as of now, so a write with one builds its tensors anew.
bool TrackedParams::names_and_tensors(PyObject*& names, PyObject*& tensors) {
  if (listed_names_ == nullptr || written_ != listed_written_) {
    const auto n = static_cast<Py_ssize_t>(written_.size());
    PyObject* fresh_names = new_value_list(n);
    PyObject* fresh_tensors = fresh_names != nullptr ? new_value_list(n) : nullptr;
    bool ok = fresh_tensors != nullptr, any_sharded = false;
    for (Py_ssize_t k = 0; ok && k < n; ++k) {
      const TrackedParam& s = slots_[written_[k]];
      PyObject* tensor = local(s, s.param);
      ok = tensor != nullptr;
      any_sharded |= s.sharded;
      PyList_SET_ITEM(fresh_names, k, Py_NewRef(s.name));
      PyList_SET_ITEM(fresh_tensors, k, tensor ? tensor : Py_NewRef(Py_None));
    }
    Py_CLEAR(listed_names_);
    Py_CLEAR(listed_tensors_);
    if (!ok) {
      Py_XDECREF(fresh_names);
      Py_XDECREF(fresh_tensors);
      return false;
    }
    if (any_sharded) {
      names = fresh_names;
      tensors = fresh_tensors;
      return true;
    }
    listed_names_ = fresh_names;
    listed_tensors_ = fresh_tensors;
    listed_written_ = written_;
  }
  names = Py_NewRef(listed_names_);
  tensors = Py_NewRef(listed_tensors_);
  return true;
}

void TrackedParams::forget_listed() {
  Py_CLEAR(listed_names_);
  Py_CLEAR(listed_tensors_);
  listed_written_.clear();
}

PyObject* TrackedParams::written_lists() {
  if (written_.empty()) Py_RETURN_NONE;
  const auto n = static_cast<Py_ssize_t>(written_.size());
  PyObject* lists[4] = {nullptr, nullptr, new_value_list(n), new_value_list(n)};
  bool ok = lists[2] && lists[3] && names_and_tensors(lists[0], lists[1]);
  for (Py_ssize_t k = 0; ok && k < n; ++k) {
    const TrackedParam& s = slots_[written_[k]];
    PyList_SET_ITEM(lists[2], k, Py_NewRef(s.data_digest));
    PyList_SET_ITEM(lists[3], k, Py_NewRef(s.grad_digest));
  }
  PyObject* out = ok ? PyTuple_Pack(4, lists[0], lists[1], lists[2], lists[3]) : nullptr;
  for (PyObject* l : lists) Py_XDECREF(l);
  return out;
}

PyObject* TrackedParams::written_slots() {
  PyObject* out = new_value_list(static_cast<Py_ssize_t>(written_.size()));
  if (out == nullptr) return nullptr;
  for (size_t k = 0; k < written_.size(); ++k) PyList_SET_ITEM(out, k, PyLong_FromUnsignedLong(written_[k]));
  return out;
}

void TrackedParams::after_write(GradEffect effect) {
  for (uint32_t i : grad_changed_) {
    const TrackedParam& s = slots_[i];
    ParamBookkeeping& b = books_[i];
    if (s.param == nullptr) continue;
    switch (effect) {
      case GradEffect::kNone:
        break;
      case GradEffect::kComputed:
        if (s.grad_ref != nullptr) b.grad_since_reset = true;
        break;
      case GradEffect::kReset:
        ++b.resets;
        b.discards += b.grad_since_reset;
        b.grad_since_reset = false;
        break;
      case GradEffect::kClipped:
        if (s.grad_ref != nullptr) {
          ++b.clips;
          set_ref(b.clip_ref, s.grad_ref);
          b.clip_version = s.grad_version;  // the version just read: the gradient as the clipping left it
        }
        break;
    }
  }
  grad_changed_.clear();
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
      for (uint32_t s = it == by_param_.end() ? UINT32_MAX : it->second; s != UINT32_MAX; s = books_[s].next_same)
        fn(s);
    }
    Py_DECREF(inner);
  }
  Py_DECREF(outer);
  return true;
}

bool TrackedParams::forget_data(PyObject* param_lists) {
  return for_each_slot_of(param_lists, "TrackedParams.forget_data: a list of parameter lists",
                          [this](uint32_t i) { slots_[i].data_known = false; });
}

void TrackedParams::forget_all_data() {
  for (uint32_t index : order_) slots_[index].data_known = false;
}

bool TrackedParams::forget_grads(PyObject* param_lists) {
  return for_each_slot_of(param_lists, "TrackedParams.forget_grads: a list of parameter lists", [this](uint32_t i) {
    slots_[i].grad_version = -1;  // no version reads -1: the next write digests the gradient again
    books_[i].clip_version = -1;  // nor is it the gradient the last clipping left any more
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
