// The model tracker's per-parameter state and its writes' per-parameter work, in C++
// (python/traincheck/tracking/tracker.py; docs/collection.md §Model tracking). Python decides when to
// write and computes the digests (torch ops on the tensors' device); this does, in one call per write
// and without a Python object per unchanged parameter: the cheap signals of what changed (version
// counters, data addresses, which gradient tensor), which tensors need a digest, the write's lists for
// record_var_states, the claims at an optimizer's step, and the gradient bookkeeping after a write
// (computed, reset by zero_grad, clipped).
//
// Which gradient tensor a parameter holds is judged by a weak reference to the one last digested: a new
// gradient can get a freed one's id, data address and version, and a weak reference neither keeps the
// old one's memory nor lets its address be reused while it lives. weakref.ref returns the existing
// reference of a live tensor, so comparing references compares tensors. Where tensors are read directly
// (tensor_fields.h), that gradient's TensorImpl is held weakly too: its object stays allocated (no other
// tensor gets its address) while its storage goes with the tensor, so a gradient read at that address is
// that tensor, known without looking up its Python object; changed in place, it is looked up to be digested.
//
// Over tens of thousands of parameters a write is bound by memory, not by instructions: each parameter's
// torch objects (Python object, TensorImpl, version counter, storage, autograd metadata, the same for its
// gradient) are a kilobyte or more spread over the heap. So a write touches each once: the owner check
// skips a module whose _parameters dict did not change, the first optimizer's history lies in the slot,
// requires_grad is read with the signature, and the write's names and tensors lists are handed out again
// while the write is of the same slots.
//
// A slot holds its parameter strongly; the module that owns it and the model it was tracked under are
// borrowed: the tracker's Python entry keeps them, and set_order drops the slots of entries it dropped,
// so this object holds nothing that leads back to the tracker (no reference cycle the GC cannot see).
// Only used with the GIL held; errors are Python errors (false or null with one set).
#pragma once

#include <Python.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "record/python/tensor_reads.h"

namespace traincheck {

// A new list for a write's per-parameter values (tensors, ints, None, bools, verdicts), untracked by the
// garbage collector: it is never part of a reference cycle (nothing it holds refers back to it), and a
// collection that ran while it lived would visit each of its items, tens of thousands per write.
inline PyObject* new_value_list(Py_ssize_t n) {
  PyObject* list = PyList_New(n);
  if (list != nullptr) PyObject_GC_UnTrack(list);
  return list;
}

// What the gradients a write saw change mean for the parameters' bookkeeping.
enum class GradEffect : int {
  kNone = 0,      // a write whose changes mean nothing (tracking, the end of the run)
  kComputed = 1,  // changed outside zero_grad or clipping: computed by backward since
  kReset = 2,     // the post-write of a recorded zero_grad: a reset
  kClipped = 3,   // the post-write of a recorded clipping call
};

// One optimizer's view of a parameter, as at that optimizer's last step.
struct OptimizerHistory {
  uintptr_t key = 0;               // id(optimizer)
  bool stepped = false;            // a step of it saw the parameter
  PyObject* grad_ref = nullptr;    // at that step: the gradient's weak reference (null: no gradient), strong
  int64_t resets = 0;              // the parameter's counters at that step
  int64_t discards = 0;
  int64_t clips = 0;
  PyObject* first_sight = nullptr;  // the optimizer's first-sight dict built_to_train was read from, strong
  bool built_to_train = false;      // it required gradients when that optimizer first saw it
  bool had_grad = false;            // it had a gradient at one of that optimizer's steps
  bool trained = false;             // built to train it, and stepped
};

// A parameter's histories, one per optimizer that stepped on it: the first inside the slot (most parameters
// have one optimizer, whose step then reads it without a cache miss of its own), any further ones on the heap.
class OptimizerHistories {
 public:
  OptimizerHistory& of(uintptr_t key) {
    if (first_.key == key || first_.key == 0) {
      first_.key = key;
      return first_;
    }
    for (OptimizerHistory& h : more_)
      if (h.key == key) return h;
    more_.push_back(OptimizerHistory{.key = key});
    return more_.back();
  }
  template <typename Fn>
  void for_each(Fn&& fn) {
    if (first_.key != 0) fn(first_);
    for (OptimizerHistory& h : more_) fn(h);
  }
  template <typename Fn>
  void for_each(Fn&& fn) const {
    if (first_.key != 0) fn(first_);
    for (const OptimizerHistory& h : more_) fn(h);
  }

 private:
  OptimizerHistory first_ = {};  // key 0: none yet
  std::vector<OptimizerHistory> more_ = {};
};

// What a write reads of every slot (the owner check, the signature, the digests), kept small: over tens of
// thousands of slots a write streams through them several times.
struct TrackedParam {
  PyObject* param = nullptr;  // strong; null: a free slot
  PyObject* owner = nullptr;  // borrowed: the module whose _parameters[attr] is param (null: a tensor itself)
  PyObject* attr = nullptr;   // strong
  uint64_t owner_version = 0;  // the owner's _parameters dict version when it last held param (0: unknown)
  PyObject* name = nullptr;    // the name's id (record_var_states' name_ids) as a Python int; strong
  bool sharded = false;  // a DTensor: digested and summarised on this rank's shard (shards.local)
  // The signature when last written (has_signature false: never written). data_known false: the data
  // must be digested again (a fused optimizer's write its version counter does not show).
  bool data_strided = false;  // the parameter is strided (read once: a tensor object keeps its layout)
  bool grad_strided = false;  // the gradient last looked at is strided
  bool has_signature = false;
  bool data_known = false;
  bool grad_present = false;
  int8_t requires_grad = -1;  // read at the last write's signature (direct reads only); -1: not read
  int64_t data_version = 0;
  uint64_t data_address = 0;
  int64_t grad_version = 0;
  uint64_t grad_address = 0;
  PyObject* grad_ref = nullptr;     // the gradient last digested, weakly (null: none), strong reference
  // The same gradient's TensorImpl when it was read directly, held weakly (TensorReads::hold_impl; 0: none):
  // a gradient read at that address is that tensor, found without its Python object.
  uint64_t grad_impl = 0;
  PyObject* data_digest = nullptr;  // int, None or a pending digest; strong
  PyObject* grad_digest = nullptr;
};

// What a slot keeps for the claims, read at optimizer steps and after writes that changed gradients: in
// a vector of its own, indexed as the slots.
struct ParamBookkeeping {
  PyObject* model = nullptr;  // borrowed: the model it was tracked under (null: none)
  uint64_t held_mark = 0;     // == TrackedParams' mark: the stepping optimizer holds it
  uint32_t next_same = UINT32_MAX;  // the next slot of the same parameter (tracked under two names)
  bool grad_since_reset = false;
  int64_t resets = 0;    // recorded zero_grad calls that changed the gradient
  int64_t discards = 0;  // of those, the ones that threw away a gradient computed since the previous reset
  int64_t clips = 0;                // recorded clipping calls that changed the gradient
  PyObject* clip_ref = nullptr;     // the gradient the last one left, weakly; strong reference
  int64_t clip_version = 0;
  OptimizerHistories history = {};
};

class TrackedParams {
 public:
  // `local`: shards.local, called for sharded slots only.
  bool init(PyObject* tensor, PyObject* parameter, PyObject* strided, PyObject* local);
  ~TrackedParams();

  // A new slot; -1 with an error set.
  long add(PyObject* param, PyObject* owner, PyObject* attr, PyObject* model, uint32_t name_id, bool sharded);
  // The tracked slots, in write order; every other slot is freed.
  bool set_order(PyObject* slots);
  // Slots of the order whose module holds another tensor under their attribute now (a list).
  PyObject* replaced();
  // Of `slots` (a list), those never written (a list).
  PyObject* unwritten(PyObject* slots);

  // Looks at `slots` (a list, or None: the order): reads signatures, decides what changed, refreshes
  // signatures and gradient references. Returns (tensors to digest, their codes: slot * 2, + 1 for a
  // gradient) and remembers the write's slots: all of them, or with only_changed those that changed.
  PyObject* detect(PyObject* slots, bool only_changed);
  // (name_ids, tensors, data digests, grad digests) of the remembered write; None when it is empty.
  PyObject* written_lists();
  // The remembered write's slots (a list).
  PyObject* written_slots();
  void after_write(GradEffect effect);

  // The claims at an optimizer's step for the remembered write (tracker.py's _step_claims): a dict keyed
  // by claim name. `groups`: optimizer.param_groups; `first_sight`: {id(p): requires_grad} or None;
  // `forwards_eval`, `forwards_ddp`: the verdicts over forwards, by id(model), taken by this step.
  PyObject* step_claims(uintptr_t key, PyObject* groups, PyObject* first_sight, bool judged, PyObject* sampler,
                        PyObject* forwards_eval, PyObject* forwards_ddp);
  // Per slot of the remembered write, the verdict over its model's evaluation forwards (`forwards_eval`,
  // by id(model), as step_claims takes it; None for no verdict or no model), for the claims made outside an
  // optimizer's step (a hand loop's boundary, the end of the run). The verdicts given are taken (deleted).
  PyObject* take_eval_verdicts(PyObject* forwards_eval);
  // At the end of the run: whether each written slot had a gradient at one of optimizer `key`'s steps.
  PyObject* final_claims(uintptr_t key);
  // {id(optimizer): [slots it was built to train and that stepped]}, over the order.
  PyObject* trained_by();

  // Parameter lists (a fused optimizer's groups, the models updated by hand): their data is digested again at
  // the next write.
  bool forget_data(PyObject* param_lists);
  // Every tracked parameter's data is digested again at the next write (a loop updating by hand through
  // `p.data`, which its version counter does not show).
  void forget_all_data();
  // Parameter lists whose gradients were written without moving their version counters (GradScaler's
  // unscaling): digested again at the next write, and no longer the gradients the last clipping left.
  bool forget_grads(PyObject* param_lists);

  PyObject* digest(long code);  // new reference; None for a freed slot
  bool set_digest(long code, PyObject* value);
  // Puts values[i] (a list) into codes[i]'s digest (a list).
  bool set_digests(PyObject* codes, PyObject* values);
  int64_t resets(long slot) const { return valid(slot) ? books_[slot].resets : 0; }
  int64_t clips(long slot) const { return valid(slot) ? books_[slot].clips : 0; }
  size_t size() const { return order_.size(); }

 private:
  // Calls fn(index) on every slot of the parameters in `param_lists` (a list of parameter lists); false with a
  // Python error (`what`) when it is not one.
  template <typename Fn>
  bool for_each_slot_of(PyObject* param_lists, const char* what, Fn&& fn);
  bool valid(long slot) const {
    return slot >= 0 && static_cast<size_t>(slot) < slots_.size() && slots_[slot].param != nullptr;
  }
  bool slot_list(PyObject* list, std::vector<uint32_t>& out) const;
  // `t` (a slot's parameter or gradient) as written: its local shard for a sharded slot; a new reference.
  PyObject* local(const TrackedParam& s, PyObject* t) const { return s.sharded ? sharded_local(t) : Py_NewRef(t); }
  PyObject* sharded_local(PyObject* t) const;
  bool address(PyObject* t, const bool* strided, bool& is_strided, uint64_t& out) const;
  struct Signature;
  bool read_directly(TrackedParam& s, Signature& sig) const;
  bool read_signature(TrackedParam& s, Signature& sig) const;
  void hold_grad_impl(TrackedParam& s, uint64_t impl) const;
  bool look(uint32_t index, std::vector<PyObject*>& tensors, std::vector<long>& codes, bool& changed);
  bool names_and_tensors(PyObject*& names, PyObject*& tensors);  // new references
  void forget_listed();
  bool mark_held(uintptr_t key, PyObject* groups, uint64_t mark, bool& has_gradients);
  void free_slot(uint32_t index);

  TensorReads reads_;
  PyObject* local_ = nullptr;  // strong
  std::vector<TrackedParam> slots_;
  std::vector<ParamBookkeeping> books_;  // one per slot
  std::vector<uint32_t> free_;
  std::vector<uint32_t> order_;
  std::unordered_map<PyObject*, uint32_t> by_param_;  // a parameter's first slot in the order
  // Per optimizer (its key), the parameters its groups held at its last step, in order, with by_param_'s
  // answer for each (UINT32_MAX: untracked): a step over the same parameters compares pointers instead of
  // looking each up. Cleared with by_param_ (tracked parameters are held, so none is freed meanwhile).
  std::unordered_map<uintptr_t, std::vector<std::pair<PyObject*, uint32_t>>> held_by_;
  std::vector<uint32_t> written_;
  std::vector<uint32_t> given_slots_;   // the slots detect was given (when not the order), kept for the allocation
  std::vector<uint32_t> grad_changed_;  // the slots whose gradient the last detect saw change
  // The names and tensors lists of the last write of listed_written_'s slots (names_and_tensors); strong.
  PyObject* listed_names_ = nullptr;
  PyObject* listed_tensors_ = nullptr;
  std::vector<uint32_t> listed_written_;
  uint64_t mark_ = 0;
  PyObject* parameters_name_ = nullptr;  // "_parameters", interned
  PyObject* training_name_ = nullptr;    // "training", interned
};

}  // namespace traincheck
