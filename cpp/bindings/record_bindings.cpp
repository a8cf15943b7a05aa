// Python entry points of the recorder (cpp/record): start/flush/shutdown, meta-var snapshots, sampling
// switch, and the wrapper factory used by traincheck.instrument.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "record/python/call_wrapper.h"
#include "record/python/value_capture.h"
#include "record/python/var_states.h"
#include "record/recorder.h"
#include "record/step_claims.h"

namespace nb = nanobind;

namespace traincheck {

namespace {

// wrap()'s keyword options. They are read once, when the wrapper is made; the wrapper keeps them as one
// byte of WrapperOptions flags and an argument filter, so nothing here runs per call.
struct WrapOptions {
  bool binds = false;                     // FunctionWrapper (binds as a method), else BuiltinWrapper
  uint8_t flags = 0;                      // WrapperOptions bits
  std::optional<uint64_t> arg_positions;  // with dump_args: bit i = positional argument i; none: all
  nb::tuple arg_keywords;                 // with arg_positions: the keyword arguments recorded
};

// An unknown keyword, a missing `binds` or a value of the wrong type is a TypeError, as it was when
// these were typed parameters.
WrapOptions read_wrap_options(const nb::kwargs& kwargs) {
  static constexpr std::pair<std::string_view, uint8_t> kFlags[] = {
      {"dump_args", kDumpArgs},   {"dump_return", kDumpReturn}, {"is_bound_method", kIsBoundMethod},
      {"dump_stack", kDumpStack}, {"track_vars", kTrackVars},   {"omit_first_arg", kOmitFirstArg},
  };
  auto as_bool = [](std::string_view name, nb::handle value) {
    if (!PyBool_Check(value.ptr())) throw nb::type_error(("wrap(): " + std::string(name) + " must be a bool").c_str());
    return value.ptr() == Py_True;
  };
  WrapOptions o;
  bool has_binds = false;
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    if (name == "binds") {
      o.binds = as_bool(name, value);
      has_binds = true;
    } else if (name == "arg_positions") {
      if (!value.is_none()) o.arg_positions = nb::cast<uint64_t>(value);
    } else if (name == "arg_keywords") {
      if (!PyTuple_Check(value.ptr())) throw nb::type_error("wrap(): arg_keywords must be a tuple");
      o.arg_keywords = nb::borrow<nb::tuple>(value);
    } else {
      auto flag = std::find_if(std::begin(kFlags), std::end(kFlags), [&](const auto& f) { return f.first == name; });
      if (flag == std::end(kFlags)) throw nb::type_error(("wrap(): unexpected keyword argument '" + name + "'").c_str());
      if (as_bool(name, value)) o.flags |= flag->second;
    }
  }
  if (!has_binds) throw nb::type_error("wrap(): missing keyword argument 'binds'");
  return o;
}

nb::object wrap(nb::handle original, const std::string& api_name, const nb::kwargs& kwargs) {
  const WrapOptions o = read_wrap_options(kwargs);
  ArgumentFilter filter;
  if (o.arg_positions) {
    filter.positions = *o.arg_positions;
    nb::list interned;
    for (nb::handle name : o.arg_keywords) {
      PyObject* s = nb::str(name).release().ptr();
      PyUnicode_InternInPlace(&s);
      interned.append(nb::steal(s));
    }
    if (nb::len(interned) > 0) filter.keywords = PyList_AsTuple(interned.ptr());  // new reference
  }
  PyObject* w = make_wrapper(original.ptr(), api_name.c_str(), o.binds, o.flags, o.arg_positions ? &filter : nullptr);
  Py_XDECREF(filter.keywords);  // the wrapper holds its own reference
  if (w == nullptr) throw nb::python_error();
  return nb::steal(w);
}

// record_var_states' docstring, its claims read from the table (one string for the module's life).
const char* record_var_states_doc() {
  static const std::string doc = [] {
    std::string d =
        "Write one state_change record per tensor (trace_VAR file), all with the same time. `claims`: the "
        "claims at an optimizer's step, None or a dict from a claim's name to None or a list holding per tensor "
        "None (no claim) or a bool; a name not declared is an error. With `hold`, nothing is emitted and the "
        "digest lists are not read: the write is returned (HeldVarStates, None when recording is off) for "
        "release_var_states. The claims (step_claims()):";
    for (const StepClaim& claim : kStepClaims) {
      d += "\n  ";
      d += claim.name;
      d += ": ";
      d += claim.meaning;
    }
    return d;
  }();
  return doc.c_str();
}

}  // namespace

void bind_recorder(nb::module_& m) {
  if (!add_wrapper_types(m.ptr())) throw nb::python_error();

  m.def(
      "start",
      [](const std::string& output_dir, uint32_t writer_period_ms, uint64_t heap_reclaim_mb) {
        Recorder::instance().start(output_dir, writer_period_ms, heap_reclaim_mb << 20);
      },
      nb::arg("output_dir"), nb::arg("writer_period_ms") = 20,
      nb::arg("heap_reclaim_mb") = Recorder::kDefaultHeapReclaimBytes >> 20,
      "Start recording: events go to trace_API_<pid>_<tid>.log files in output_dir. heap_reclaim_mb:\n"
      "free heap pages go back to the kernel whenever the resident size grew by this much (0: never).");
  m.def(
      "flush", [] { Recorder::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>(),
      "Write every event recorded so far and return when it is on disk.");
  m.def(
      "shutdown", [] { Recorder::instance().shutdown(); }, nb::call_guard<nb::gil_scoped_release>(),
      "Flush, stop the writer thread and disable recording.");
  m.def(
      "set_recording",
      [](bool on, bool rare_calls) {
        g_record_rare_calls.store(!on && rare_calls, std::memory_order_relaxed);
        g_recording_enabled.store(on, std::memory_order_relaxed);
      },
      nb::arg("on"), nb::arg("rare_calls") = false,
      "Sampling switch: when off, wrappers only call the original, except, with rare_calls (a step\n"
      "sampled out, not a script's 'disable'), calls of APIs run less than once every two steps and what\n"
      "they call.");
  m.def("is_recording_rare_calls", [] { return g_record_rare_calls.load(std::memory_order_relaxed); });
  m.def("is_recording", [] { return g_recording_enabled.load(std::memory_order_relaxed); });
  m.def(
      "publish_meta_vars", [](const std::string& json_members) { return Recorder::instance().publish_meta(json_members); },
      "Make json_members (the serialised meta_vars dict without 'step' and without braces) what later\n"
      "events carry beside their step.");
  m.def(
      "set_step", [](int64_t step) { Recorder::instance().publish_step(step); },
      "The meta_vars.step of later events (one store per iteration; nothing is interned).");
  m.def("stats", [] {
    const RecorderStats s = Recorder::instance().stats();
    nb::dict d;
    d["events_written"] = s.events_written;
    d["events_dropped"] = s.events_dropped;
    d["write_errors"] = s.write_errors;
    d["threads"] = s.threads;
    d["heap_trims"] = s.heap_trims;
    d["heap_released_bytes"] = s.heap_released_bytes;
    d["peak_rss_bytes"] = s.peak_rss_bytes;
    d["event_memory_bytes"] = s.event_memory_bytes;
    return d;
  });
  m.def(
      "set_torch_types",
      [](nb::handle tensor, nb::handle parameter, nb::handle dtype, nb::handle device, nb::handle module) {
        auto type = [](nb::handle h) { return reinterpret_cast<PyTypeObject*>(h.ptr()); };
        set_torch_types({type(tensor), type(parameter), type(dtype), type(device), type(module)});
        // The types are kept for the process's life.
        for (nb::handle h : {tensor, parameter, dtype, device, module}) h.inc_ref();
      },
      "Tell the argument capture which classes are torch.Tensor, Parameter, dtype, device and nn.Module.");
  m.def("wrap", &wrap, nb::arg("original"), nb::arg("api_name"), nb::arg("options"),
        "wrap(original, api_name, *, binds, dump_args=False, dump_return=False, is_bound_method=False,\n"
        "dump_stack=False, track_vars=False, omit_first_arg=False, arg_positions=None, arg_keywords=())\n"
        "A C-level wrapper of `original` that records calls under `api_name`; `binds`: it binds as a method\n"
        "(FunctionWrapper). With dump_args, `arg_positions` (a bit mask of positional indices, bit i =\n"
        "argument i) and `arg_keywords` (names) select the arguments recorded; arg_positions=None records\n"
        "them all. Options are keywords only, read once here (the wrapper keeps them as flags).");
  m.def(
      "intern", [](const std::string& text) { return Recorder::instance().intern_name(text); },
      "An id for a string that events refer to (variable names, modes).");
  nb::class_<HeldVarStates>(m, "HeldVarStates",
                            "A write of record_var_states(hold=True): encoded, not yet emitted (release_var_states).");
  m.def(
      "record_var_states",
      [](nb::list name_ids, nb::list tensors, nb::list data_digests, nb::list grad_digests, uint32_t var_type_id,
         uint32_t mode_id, uint32_t dump_loc_id, nb::handle claims, bool hold) -> nb::object {
        if (!g_recording_enabled.load(std::memory_order_relaxed)) return nb::none();
        std::unique_ptr<HeldVarStates> held = hold ? std::make_unique<HeldVarStates>() : nullptr;
        if (!record_var_states(name_ids.ptr(), tensors.ptr(), data_digests.ptr(), grad_digests.ptr(), claims.ptr(),
                               {var_type_id, mode_id, dump_loc_id}, held.get())) {
          throw nb::python_error();
        }
        if (!held) return nb::none();
        return nb::cast(held.release(), nb::rv_policy::take_ownership);
      },
      nb::arg("name_ids"), nb::arg("tensors"), nb::arg("data_digests"), nb::arg("grad_digests"),
      nb::arg("var_type_id"), nb::arg("mode_id") = 0, nb::arg("dump_loc_id") = 0,
      nb::arg("claims").none() = nb::none(), nb::arg("hold") = false, record_var_states_doc());
  m.def(
      "release_var_states",
      [](HeldVarStates& held, nb::list data_digests, nb::list grad_digests) {
        if (!release_var_states(held, data_digests.ptr(), grad_digests.ptr())) throw nb::python_error();
      },
      nb::arg("held"), nb::arg("data_digests"), nb::arg("grad_digests"),
      "Emit a write held by record_var_states(hold=True) with its digests (lists as long as the write's, int "
      "or None per tensor), with the time, step and meta-vars of the write, whether recording is on now or not.");
  m.def(
      "step_claims",
      [] {
        nb::list out;
        for (const StepClaim& claim : kStepClaims) {
          nb::dict d;
          d["name"] = nb::str(claim.name.data(), claim.name.size());
          d["attribute"] = nb::str(claim.attribute.data(), claim.attribute.size());
          d["bit"] = claim.bit;
          d["meaning"] = nb::str(claim.meaning.data(), claim.meaning.size());
          out.append(d);
        }
        return out;
      },
      "The claims at an optimizer's step that record_var_states writes (record/step_claims.h), in bit order: "
      "dicts of name, attribute, bit, meaning.");
  m.def(
      "set_var_hook", [](nb::handle hook) { set_var_hook(hook.ptr()); },
      "hook(api_name, 'pre'|'post') runs around calls of wrappers made with track_vars=True.");
  m.def(
      "set_inside_recorder", [](bool inside) { return set_inside_recorder(inside); },
      "Suspend (True) or resume (False) recording on this thread; returns the previous state.");
  m.def("is_wrapper", [](nb::handle obj) { return is_wrapper(obj.ptr()); });
  m.def(
      "was_called", [](nb::handle w) { return is_wrapper(w.ptr()) && was_called(w.ptr()); },
      "Whether the wrapper recorded a call (its API appears in the trace).");
  m.def("unwrap", [](nb::handle obj) {
    return is_wrapper(obj.ptr()) ? nb::borrow(wrapped_of(obj.ptr())) : nb::borrow(obj);
  });
}

}  // namespace traincheck
