#include "record/python/var_states.h"

#include <array>
#include <cstring>
#include <string_view>

#include "record/python/clear_error.h"
#include "record/python/value_capture.h"
#include "record/recorder.h"

namespace traincheck {

namespace {

// A claims list is None or a list of n items.
bool valid_claims(PyObject* claims, Py_ssize_t n) {
  if (claims == Py_None) return true;
  if (!PyList_Check(claims)) {
    PyErr_SetString(PyExc_TypeError, "record_var_states: a claims argument is None or a list");
    return false;
  }
  if (PyList_GET_SIZE(claims) != n) {
    PyErr_SetString(PyExc_ValueError, "record_var_states: lists of different lengths");
    return false;
  }
  return true;
}

// The per-tensor lists of a claims dict, by claim bit (nullptr: the claim is made for no tensor).
using ClaimLists = std::array<PyObject*, kStepClaimCount>;

// Reads `claims` (None or a dict keyed by claim name) into `lists`; false with a Python error set for a
// key that names no declared claim, which would otherwise be dropped without a word.
bool read_claims(PyObject* claims, Py_ssize_t n, ClaimLists& lists) {
  lists.fill(nullptr);
  if (claims == Py_None) return true;
  if (!PyDict_Check(claims)) {
    PyErr_SetString(PyExc_TypeError, "record_var_states: claims is None or a dict from a claim's name to a list");
    return false;
  }
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(claims, &pos, &key, &value)) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &size) : nullptr;
    const StepClaim* found = nullptr;
    if (text != nullptr)
      for (const StepClaim& claim : kStepClaims)
        if (claim.name == std::string_view(text, static_cast<size_t>(size))) found = &claim;
    if (found == nullptr) {
      clear_error_keeping_stop_requests();
      PyErr_Format(PyExc_ValueError, "record_var_states: %R is no step claim (traincheck._core.step_claims())", key);
      return false;
    }
    if (!valid_claims(value, n)) return false;
    lists[found->bit] = value == Py_None ? nullptr : value;
  }
  return true;
}

// Adds item i's claim of `claims` (nullptr or a list) to `flags` as claim `bit`.
void add_claim(PyObject* claims, Py_ssize_t i, uint32_t bit, uint32_t& flags) {
  if (claims == nullptr) return;
  PyObject* claim = PyList_GET_ITEM(claims, i);
  if (claim != Py_None) flags |= claim_made_flag(bit) | (PyObject_IsTrue(claim) == 1 ? claim_holds_flag(bit) : 0);
}

// Item i of the digest lists (int or None) into `v`.
void set_digests(VarStateHeader& v, PyObject* data_digests, PyObject* grad_digests, Py_ssize_t i) {
  PyObject* data = PyList_GET_ITEM(data_digests, i);
  if (data != Py_None) {
    v.data_digest = PyLong_AsLongLong(data);
    v.flags |= kVarHasDataDigest;
  }
  PyObject* grad = PyList_GET_ITEM(grad_digests, i);
  if (grad != Py_None) {
    v.grad_digest = PyLong_AsLongLong(grad);
    v.flags |= kVarHasGradDigest;
  }
}

}  // namespace

bool record_var_states(PyObject* name_ids, PyObject* tensors, PyObject* data_digests, PyObject* grad_digests,
                       PyObject* claims, const VarBatchLabels& labels, HeldVarStates* held) {
  if (!PyList_Check(name_ids) || !PyList_Check(tensors) || !PyList_Check(data_digests) ||
      !PyList_Check(grad_digests)) {
    PyErr_SetString(PyExc_TypeError, "record_var_states expects four lists");
    return false;
  }
  const Py_ssize_t n = PyList_GET_SIZE(name_ids);
  if (PyList_GET_SIZE(tensors) != n || PyList_GET_SIZE(data_digests) != n || PyList_GET_SIZE(grad_digests) != n) {
    PyErr_SetString(PyExc_ValueError, "record_var_states: lists of different lengths");
    return false;
  }
  ClaimLists claim_lists;
  if (!read_claims(claims, n, claim_lists)) return false;
  Recorder& recorder = Recorder::instance();
  const uint64_t now = monotonic_ns();  // one dump, one time: as the original's sampler writes it
  if (held != nullptr) {
    held->time_ns = now;
    held->meta_id = recorder.current_meta();
    held->step = recorder.current_step();
    held->size = n;
  }
  thread_local PayloadEncoder payload;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* tensor = PyList_GET_ITEM(tensors, i);
    if (!is_tensor(tensor)) continue;
    VarStateHeader v{};
    v.var_type_id = labels.var_type_id;
    v.mode_id = labels.mode_id;
    v.dump_loc_id = labels.dump_loc_id;
    int64_t dims[kMaxTensorDims];
    summarize_tensor(tensor, v.tensor, dims);
    if (held == nullptr) set_digests(v, data_digests, grad_digests, i);
    for (uint32_t bit = 0; bit < kStepClaimCount; ++bit) add_claim(claim_lists[bit], i, bit, v.flags);
    if (PyErr_Occurred()) return false;
    payload.clear();
    payload.section(SectionTag::kVarState);
    const size_t header_at = payload.mark();
    payload.raw(&v, sizeof v);
    payload.raw(dims, sizeof(int64_t) * v.tensor.ndim);
    if (capture_user_attributes(payload, tensor)) {
      v.flags |= kVarHasUserAttributes;
      payload.patch(header_at + offsetof(VarStateHeader, flags), &v.flags, sizeof v.flags);
    }
    const uint32_t name_id = static_cast<uint32_t>(PyLong_AsUnsignedLong(PyList_GET_ITEM(name_ids, i)));
    if (PyErr_Occurred()) return false;
    if (held != nullptr) {
      held->events.push_back({name_id, i, held->payloads.size(), header_at, static_cast<uint32_t>(payload.size())});
      held->payloads.insert(held->payloads.end(), payload.data(), payload.data() + payload.size());
      continue;
    }
    recorder.emit({.kind = EventKind::kVarState, .api_id = name_id, .time_ns = now, .call_ns = now}, payload.data(),
                  payload.size());
  }
  return true;
}

bool release_var_states(HeldVarStates& held, PyObject* data_digests, PyObject* grad_digests) {
  if (held.released) {
    PyErr_SetString(PyExc_ValueError, "release_var_states: this write was released before");
    return false;
  }
  if (!PyList_Check(data_digests) || !PyList_Check(grad_digests)) {
    PyErr_SetString(PyExc_TypeError, "release_var_states expects two lists");
    return false;
  }
  if (PyList_GET_SIZE(data_digests) != held.size || PyList_GET_SIZE(grad_digests) != held.size) {
    PyErr_SetString(PyExc_ValueError, "release_var_states: lists not as long as the write's");
    return false;
  }
  for (HeldVarStates::Event& e : held.events) {
    std::byte* payload = held.payloads.data() + e.payload_at;
    VarStateHeader v;
    std::memcpy(&v, payload + e.header_at, sizeof v);
    set_digests(v, data_digests, grad_digests, e.index);
    if (PyErr_Occurred()) return false;
    std::memcpy(payload + e.header_at, &v, sizeof v);
  }
  held.released = true;
  Recorder& recorder = Recorder::instance();
  for (const HeldVarStates::Event& e : held.events) {
    recorder.emit_at({.kind = EventKind::kVarState, .api_id = e.name_id, .time_ns = held.time_ns, .call_ns = held.time_ns},
                     held.meta_id, held.step, held.payloads.data() + e.payload_at, e.payload_size);
  }
  held.payloads = {};
  held.events = {};
  return true;
}

}  // namespace traincheck
