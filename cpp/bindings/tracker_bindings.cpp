// traincheck._core.TrackedParams: the model tracker's per-parameter state (record/python/tracked_params.h);
// traincheck._core.HostDigests: its digests of host tensors (record/python/host_digests.h);
// set_tensor_field_reader: direct tensor reads from traincheck._torch_fields (record/python/tensor_fields.h).
#include <nanobind/nanobind.h>

#include "record/python/host_digests.h"
#include "record/python/tracked_params.h"

namespace nb = nanobind;

namespace traincheck {

namespace {

nb::object checked(PyObject* result) {
  if (result == nullptr) throw nb::python_error();
  return nb::steal(result);
}

void check(bool ok) {
  if (!ok) throw nb::python_error();
}

}  // namespace

void bind_tracker(nb::module_& m) {
  nb::class_<TrackedParams>(m, "TrackedParams",
                            "The model tracker's per-parameter state and per-write work "
                            "(record/python/tracked_params.h).")
      .def(
          "__init__",
          [](TrackedParams* self, nb::handle tensor, nb::handle parameter, nb::handle strided, nb::handle local) {
            new (self) TrackedParams();
            check(self->init(tensor.ptr(), parameter.ptr(), strided.ptr(), local.ptr()));
          },
          nb::arg("tensor"), nb::arg("parameter"), nb::arg("strided"), nb::arg("local"),
          "torch.Tensor, torch.nn.Parameter, torch.strided, and shards.local (called for sharded slots).")
      .def(
          "add",
          [](TrackedParams& t, nb::handle param, nb::handle owner, nb::handle attr, nb::handle model, uint32_t name_id,
             bool sharded) {
            return checked(PyLong_FromLong(
                t.add(param.ptr(), owner.ptr(), attr.ptr(), model.ptr(), name_id, sharded)));
          },
          nb::arg("param"), nb::arg("owner").none(), nb::arg("attr").none(), nb::arg("model").none(),
          nb::arg("name_id"), nb::arg("sharded"),
          "A new slot for `param` (owner, model: borrowed, the caller keeps them alive while the slot is in the order).")
      .def("set_order", [](TrackedParams& t, nb::list slots) { check(t.set_order(slots.ptr())); },
           "The tracked slots, in write order; every other slot is freed.")
      .def("replaced", [](TrackedParams& t) { return checked(t.replaced()); },
           "Slots whose module holds another tensor under their attribute now.")
      .def("unwritten", [](TrackedParams& t, nb::list slots) { return checked(t.unwritten(slots.ptr())); },
           "Of `slots`, those never written.")
      .def(
          "detect",
          [](TrackedParams& t, nb::handle slots, bool only_changed) { return checked(t.detect(slots.ptr(), only_changed)); },
          nb::arg("slots").none(), nb::arg("only_changed"),
          "Signatures and change detection over `slots` (None: the order): (tensors to digest, their codes).")
      .def("written_lists", [](TrackedParams& t) { return checked(t.written_lists()); },
           "(name_ids, tensors, data digests, grad digests) of the last detect's write, or None when empty.")
      .def("written_slots", [](TrackedParams& t) { return checked(t.written_slots()); })
      .def(
          "after_write", [](TrackedParams& t, int effect) { t.after_write(static_cast<GradEffect>(effect)); },
          "The gradients the last detect saw change: 0 nothing, 1 computed, 2 reset (zero_grad), 3 clipped.")
      .def(
          "step_claims",
          [](TrackedParams& t, uintptr_t key, nb::handle groups, nb::handle first_sight, bool judged, nb::handle sampler,
             nb::handle forwards_eval, nb::handle forwards_ddp) {
            return checked(t.step_claims(key, groups.ptr(), first_sight.ptr(), judged, sampler.ptr(),
                                         forwards_eval.ptr(), forwards_ddp.ptr()));
          },
          nb::arg("key"), nb::arg("groups"), nb::arg("first_sight").none(), nb::arg("judged"),
          nb::arg("sampler").none(), nb::arg("forwards_eval"), nb::arg("forwards_ddp"),
          "The claims at optimizer `key`'s step for the last detect's write, keyed by claim name.")
      .def("take_eval_verdicts",
           [](TrackedParams& t, nb::handle table) { return checked(t.take_eval_verdicts(table.ptr())); })
      .def("final_claims", [](TrackedParams& t, uintptr_t key) { return checked(t.final_claims(key)); })
      .def("trained_by", [](TrackedParams& t) { return checked(t.trained_by()); })
      .def("forget_data", [](TrackedParams& t, nb::handle lists) { check(t.forget_data(lists.ptr())); })
      .def("forget_all_data", &TrackedParams::forget_all_data)
      .def("forget_grads", [](TrackedParams& t, nb::handle lists) { check(t.forget_grads(lists.ptr())); })
      .def("digest", [](TrackedParams& t, long code) { return checked(t.digest(code)); })
      .def("set_digest", [](TrackedParams& t, long code, nb::handle v) { check(t.set_digest(code, v.ptr())); })
      .def("set_digests",
           [](TrackedParams& t, nb::list codes, nb::list values) { check(t.set_digests(codes.ptr(), values.ptr())); })
      .def("resets", &TrackedParams::resets)
      .def("clips", &TrackedParams::clips)
      .def("__len__", &TrackedParams::size);

  nb::class_<HostDigests>(m, "HostDigests",
                          "The full digests of host tensors, read in place (record/python/host_digests.h).")
      .def(
          "__init__",
          [](HostDigests* self, nb::handle tensor, nb::handle parameter, nb::handle strided, nb::dict widths,
             nb::handle int64) {
            new (self) HostDigests();
            check(self->init(tensor.ptr(), parameter.ptr(), strided.ptr(), widths.ptr(), int64.ptr()));
          },
          nb::arg("tensor"), nb::arg("parameter"), nb::arg("strided"), nb::arg("widths"), nb::arg("int64"),
          "torch.Tensor, torch.nn.Parameter, torch.strided, {dtype: bytes its bits are read at}, torch.int64.")
      .def(
          "digests", [](const HostDigests& d, nb::list tensors, nb::handle table) {
            return checked(d.digests(tensors.ptr(), table.ptr()));
          },
          nb::arg("tensors"), nb::arg("table"),
          "(values, rest): each tensor's digest with the weight table (0 for one not taken here), and the indices "
          "of those not taken, left to the torch ops.");

  m.def(
      "set_tensor_field_reader",
      [](nb::handle capsule) {
        if (capsule.is_none()) {
          TensorReads::set_field_reader(nullptr);
          return;
        }
        auto* reader = static_cast<const TensorFieldReader*>(PyCapsule_GetPointer(capsule.ptr(), kTensorFieldsCapsule));
        if (reader == nullptr) throw nb::python_error();
        if (reader->struct_size != sizeof(TensorFieldReader))
          throw nb::value_error("set_tensor_field_reader: the capsule's reader is another version of the struct");
        TensorReads::set_field_reader(reader);
      },
      nb::arg("capsule").none(),
      "Reads plain tensors' fields straight from their TensorImpl from now on: traincheck._torch_fields.reader() "
      "(record/python/tensor_fields.h); None: through torch's getters only.");
  m.def("has_tensor_field_reader", [] { return TensorReads::field_reader() != nullptr; });
}

}  // namespace traincheck
