// TrackedParams' claims at an optimizer's step and at the end of the run (tracker.py's module docstring
// says what each claim means; record/step_claims.h declares them).
#include <array>
#include <string_view>

#include "record/python/tracked_params.h"
#include "record/step_claims.h"

namespace traincheck {

namespace {

PyObject* claim(int verdict) { return verdict < 0 ? Py_None : verdict ? Py_True : Py_False; }  // borrowed

// Per model seen in one step's claims: its mode and the verdicts over its forwards (borrowed).
struct ModelClaims {
  PyObject* model = nullptr;
  int training = -1;
  PyObject* evaluating = nullptr;
  PyObject* through_ddp = nullptr;
};

// `table.get(id(model))`, borrowed; None when absent.
PyObject* verdict_of(PyObject* table, PyObject* id) {
  PyObject* v = PyDict_Check(table) ? PyDict_GetItemWithError(table, id) : nullptr;
  return v != nullptr ? v : Py_None;
}

}  // namespace

// Marks the tracked slots of the parameters `groups` hold; has_gradients: some parameter they hold,
// tracked or not, has a gradient.
bool TrackedParams::mark_held(uintptr_t key, PyObject* groups, uint64_t mark, bool& has_gradients) {
  has_gradients = false;
  std::vector<std::pair<PyObject*, uint32_t>>& held = held_by_[key];
  size_t at = 0;  // the position in `held` of the next parameter
  PyObject* group_list = PySequence_Fast(groups, "step_claims: param_groups is a sequence");
  if (group_list == nullptr) return false;
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(group_list); ++i) {
    PyObject* group = PySequence_Fast_GET_ITEM(group_list, i);
    PyObject* params = PyDict_Check(group) ? Py_XNewRef(PyDict_GetItemString(group, "params"))
                                           : PyObject_CallMethod(group, "get", "sO", "params", Py_None);
    if (params == nullptr || params == Py_None) {
      ok = !PyErr_Occurred();
      Py_XDECREF(params);
      continue;
    }
    PyObject* list = PySequence_Fast(params, "step_claims: a group's params is a sequence");
    Py_DECREF(params);
    if (list == nullptr) {
      ok = false;
      break;
    }
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(list); ++k) {
      PyObject* p = PySequence_Fast_GET_ITEM(list, k);
      if (at == held.size() || held[at].first != p) {  // not as at the last step: looked up
        auto it = by_param_.find(p);
        held.resize(at + 1);
        held[at] = {p, it == by_param_.end() ? UINT32_MAX : it->second};
      }
      for (uint32_t s = held[at++].second; s != UINT32_MAX; s = books_[s].next_same) books_[s].held_mark = mark;
      if (!has_gradients) {
        PyObject* g = reads_.grad(p);
        if (g == nullptr) {
          ok = false;
          break;
        }
        has_gradients = g != Py_None;
        Py_DECREF(g);
      }
    }
    Py_DECREF(list);
  }
  Py_DECREF(group_list);
  held.resize(at);
  return ok;
}

PyObject* TrackedParams::step_claims(uintptr_t key, PyObject* groups, PyObject* first_sight, bool judged,
                                     PyObject* sampler, PyObject* forwards_eval, PyObject* forwards_ddp) {
  const uint64_t mark = ++mark_;
  bool has_gradients = false;
  if (!mark_held(key, groups, mark, has_gradients)) return nullptr;
  judged = judged && first_sight != Py_None && has_gradients;
  const auto n = static_cast<Py_ssize_t>(written_.size());
  enum { kReset, kTraining, kGradients, kOnce, kClipped, kGets, kEvaluating, kThroughDdp, kEpochs, kCount };
  static constexpr std::array<std::string_view, kCount> kKeys = {
      "grad_reset",     "model_training",     "optimizer_has_gradients", "grad_reset_once",       "grad_clipped",
      "gets_gradients", "eval_in_validation", "forward_through_ddp",     "sampler_epoch_advanced"};
  static_assert(step_claim(kKeys[kEpochs]).bit < kStepClaimCount);  // every key names a declared claim
  std::array<PyObject*, kCount> lists{};
  for (PyObject*& l : lists)
    if ((l = new_value_list(n)) == nullptr) break;
  std::vector<ModelClaims> models;
  bool ok = lists.back() != nullptr;
  for (Py_ssize_t k = 0; ok && k < n; ++k) {
    const TrackedParam& s = slots_[written_[k]];
    ParamBookkeeping& b = books_[written_[k]];
    std::array<PyObject*, kCount> row;
    row.fill(Py_None);
    if (b.held_mark == mark) {
      OptimizerHistory& h = b.history.of(key);
      PyObject* ref = s.grad_ref;
      // Whether reset since that optimizer's previous step, and at most once; clipped since, and stepped
      // on as the clipping left it.
      const bool had_last = h.stepped, last_had_grad = h.grad_ref != nullptr;
      const bool reset = had_last && last_had_grad && (ref != h.grad_ref || h.resets != b.resets);
      const bool once = b.discards - h.discards <= 1;
      const int64_t clips_before = had_last ? h.clips : 0;
      if (ref != nullptr && b.clips > clips_before) {
        PyObject* g = ref == b.clip_ref ? weak_referent(ref) : nullptr;
        int64_t version = 0;
        if (g != nullptr && !reads_.version(g, version)) {
          ok = false;
          break;
        }
        row[kClipped] = claim(g != nullptr && version == b.clip_version);
      }
      if (ref != nullptr && had_last && last_had_grad) {
        row[kReset] = claim(reset);
        row[kOnce] = claim(once);
      }
      if (h.grad_ref != ref) {  // the same reference as at its last step leaves its count (a cold line) alone
        Py_XINCREF(ref);
        Py_XSETREF(h.grad_ref, ref);
      }
      h.stepped = true;
      h.resets = b.resets;
      h.discards = b.discards;
      h.clips = b.clips;
      if (ref != nullptr) h.had_grad = true;
      // Which parameters the optimizer was built to train: read once per optimizer from its first-sight
      // dict (setdefault: one first seen at a step counts as it is now).
      if (first_sight != Py_None && h.first_sight != first_sight) {
        PyObject* id = PyLong_FromVoidPtr(s.param);
        int wants_grad = id != nullptr ? reads_.requires_grad(s.param) : -1;
        PyObject* value = wants_grad < 0 ? nullptr : PyDict_SetDefault(first_sight, id, wants_grad ? Py_True : Py_False);
        Py_XDECREF(id);
        const int truth = value != nullptr ? PyObject_IsTrue(value) : -1;
        if (truth < 0) {
          ok = false;
          break;
        }
        h.built_to_train = truth;
        Py_INCREF(first_sight);
        Py_XSETREF(h.first_sight, first_sight);
      }
      const bool built = first_sight != Py_None && h.built_to_train;
      if (built) h.trained = true;
      // A parameter frozen now is judged at the end of the run: it may be unfrozen later.
      int trainable = !(judged && built) ? 0 : s.requires_grad >= 0 ? s.requires_grad : reads_.requires_grad(s.param);
      if (trainable < 0) {
        ok = false;
        break;
      }
      row[kGets] = trainable ? claim(h.had_grad) : Py_None;
      row[kGradients] = claim(has_gradients);
      row[kEpochs] = sampler;
      ModelClaims* m = nullptr;
      for (ModelClaims& seen : models)
        if (seen.model == b.model) m = &seen;
      if (m == nullptr) {
        ModelClaims fresh{.model = b.model, .evaluating = Py_None, .through_ddp = Py_None};
        if (b.model != nullptr) {
          PyObject* id = PyLong_FromVoidPtr(b.model);
          PyObject* training = PyObject_GetAttr(b.model, training_name_);
          fresh.training = training != nullptr ? PyObject_IsTrue(training) : -1;
          Py_XDECREF(training);
          if (id != nullptr && fresh.training >= 0) {
            fresh.evaluating = verdict_of(forwards_eval, id);
            fresh.through_ddp = verdict_of(forwards_ddp, id);
          }
          Py_XDECREF(id);
          if (fresh.training < 0 || PyErr_Occurred()) {
            ok = false;
            break;
          }
        }
        models.push_back(fresh);
        m = &models.back();
      }
      if (ref != nullptr && b.model != nullptr) row[kTraining] = claim(m->training);
      row[kEvaluating] = m->evaluating;
      row[kThroughDdp] = m->through_ddp;
    }
    for (int c = 0; c < kCount; ++c) PyList_SET_ITEM(lists[c], k, Py_NewRef(row[c]));
  }
  PyObject* out = ok ? PyDict_New() : nullptr;
  for (int c = 0; out != nullptr && c < kCount; ++c) {
    if (PyDict_SetItemString(out, kKeys[c].data(), lists[c]) < 0) Py_CLEAR(out);
  }
  // The verdicts over forwards are taken by this step. Items are borrowed from the dicts until here.
  for (const ModelClaims& m : models) {
    if (m.model == nullptr || out == nullptr) continue;
    PyObject* id = PyLong_FromVoidPtr(m.model);
    for (PyObject* table : {forwards_eval, forwards_ddp})
      if (id != nullptr && PyDict_Check(table) && PyDict_Contains(table, id) == 1 && PyDict_DelItem(table, id) < 0)
        Py_CLEAR(out);
    Py_XDECREF(id);
  }
  for (PyObject* l : lists) Py_XDECREF(l);
  return out;
}

PyObject* TrackedParams::take_eval_verdicts(PyObject* forwards_eval) {
  if (!PyDict_Check(forwards_eval)) {
    PyErr_SetString(PyExc_TypeError, "TrackedParams.take_eval_verdicts: a dict of verdicts by id(model)");
    return nullptr;
  }
  PyObject* list = new_value_list(static_cast<Py_ssize_t>(written_.size()));
  std::vector<PyObject*> taken;  // new references: the ids whose verdicts were given
  for (size_t k = 0; list != nullptr && k < written_.size(); ++k) {
    PyObject* model = books_[written_[k]].model;
    PyObject* id = model != nullptr ? PyLong_FromVoidPtr(model) : nullptr;
    PyObject* verdict = id != nullptr ? verdict_of(forwards_eval, id) : Py_None;
    if (PyErr_Occurred()) {
      Py_XDECREF(id);
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, k, Py_NewRef(verdict));
    if (verdict != Py_None) taken.push_back(Py_NewRef(id));
    Py_XDECREF(id);
  }
  for (PyObject* id : taken) {
    if (list != nullptr && PyDict_Contains(forwards_eval, id) == 1 && PyDict_DelItem(forwards_eval, id) < 0)
      Py_CLEAR(list);
    Py_DECREF(id);
  }
  return list;
}

PyObject* TrackedParams::final_claims(uintptr_t key) {
  PyObject* list = new_value_list(static_cast<Py_ssize_t>(written_.size()));
  if (list == nullptr) return nullptr;
  for (size_t k = 0; k < written_.size(); ++k) {
    bool had = false;
    books_[written_[k]].history.for_each([&](const OptimizerHistory& h) { had |= h.key == key && h.had_grad; });
    PyList_SET_ITEM(list, k, Py_NewRef(had ? Py_True : Py_False));
  }
  PyObject* out = PyDict_New();
  if (out != nullptr && PyDict_SetItemString(out, "gets_gradients", list) < 0) Py_CLEAR(out);
  Py_DECREF(list);
  return out;
}

PyObject* TrackedParams::trained_by() {
  PyObject* out = PyDict_New();
  for (uint32_t i : order_) {
    books_[i].history.for_each([&](const OptimizerHistory& h) {
      if (out == nullptr || !h.trained) return;
      PyObject* key = PyLong_FromVoidPtr(reinterpret_cast<void*>(h.key));
      PyObject* index = PyLong_FromUnsignedLong(i);
      PyObject* list = key != nullptr ? PyDict_GetItemWithError(out, key) : nullptr;
      if (list == nullptr && !PyErr_Occurred() && key != nullptr) {
        list = PyList_New(0);
        if (list != nullptr && PyDict_SetItem(out, key, list) < 0) Py_CLEAR(list);
        Py_XDECREF(list);  // the dict holds it
      }
      if (list == nullptr || index == nullptr || PyList_Append(list, index) < 0) Py_CLEAR(out);
      Py_XDECREF(key);
      Py_XDECREF(index);
    });
  }
  return out;
}

}  // namespace traincheck
