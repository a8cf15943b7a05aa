#include "record/python/call_wrapper.h"

#include <structmember.h>

#include <string>

#include "record/python/clear_error.h"
#include "record/python/value_capture.h"
#include "record/recorder.h"

namespace traincheck {

namespace {

struct CallWrapper {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* wrapped;
  PyObject* dict;
  PyObject* weakrefs;
  PyObject* api_name;  // str, passed to the variable hook
  uint32_t api_id;
  uint8_t options;
  uint8_t called;            // set on the first recorded call: which APIs the trace mentions
  uint8_t has_arg_filter;    // kDumpArgs records only the arguments arg_filter selects
  uint32_t steps_called;     // steps in which it ran (recorded or sampled out): tells rare APIs (rare_call)
  int64_t last_step_called;
  ArgumentFilter arg_filter;  // keywords: a strong reference
};

PyObject* g_var_hook = nullptr;

PyTypeObject* g_function_wrapper_type = nullptr;
PyTypeObject* g_builtin_wrapper_type = nullptr;

// Set while the wrapper itself inspects Python objects: a wrapped function reached from there (a tensor
// subclass's __torch_function__, say) runs unrecorded instead of recursing into the recorder.
thread_local bool tls_inside_recorder = false;
thread_local PayloadEncoder tls_payload;
// Rare calls running on this thread during a sampled-out step: what they call is recorded too, so that
// an invariant over a rare call's children (APIContain) sees all of them.
thread_local uint32_t tls_rare_call_depth = 0;

struct RareCallScope {
  RareCallScope() { ++tls_rare_call_depth; }
  ~RareCallScope() { --tls_rare_call_depth; }
};

struct InsideRecorder {
  InsideRecorder() { tls_inside_recorder = true; }
  ~InsideRecorder() { tls_inside_recorder = false; }
};

std::string qualified_type_name(PyTypeObject* type) {
  std::string name;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  if (module && PyUnicode_Check(module)) {
    const char* m = PyUnicode_AsUTF8(module);
    if (m && std::string_view(m) != "builtins") {
      name = m;
      name += '.';
    }
  }
  Py_XDECREF(module);
  clear_error_keeping_stop_requests();
  PyObject* qualname = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__qualname__");
  const char* q = qualname && PyUnicode_Check(qualname) ? PyUnicode_AsUTF8(qualname) : nullptr;
  name += q ? q : type->tp_name;
  Py_XDECREF(qualname);
  clear_error_keeping_stop_requests();
  return name;
}

// Records the exception in flight without disturbing it: it is re-raised unchanged to the caller.
void record_exception(EventInfo event) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PayloadEncoder& payload = tls_payload;
  payload.clear();
  payload.section(SectionTag::kException);
  {
    InsideRecorder guard;
    payload.text(type ? qualified_type_name(reinterpret_cast<PyTypeObject*>(type)) : std::string("Exception"));
    std::string message;
    if (value != nullptr) {
      if (PyObject* s = PyObject_Str(value)) {
        if (const char* m = PyUnicode_AsUTF8(s)) message = m;
        Py_DECREF(s);
      }
      clear_error_keeping_stop_requests();
    }
    payload.text(message);
  }
  PyErr_Restore(type, value, traceback);
  event.kind = EventKind::kCallException;
  event.time_ns = monotonic_ns();
  Recorder::instance().emit(event, payload.data(), payload.size());
}

// The Python stack as traceback.format_stack() lists it, outermost first, without source lines (those
// would need linecache, i.e. Python code, on the training thread).
void capture_stack(PayloadEncoder& out) {
  constexpr int kMaxFrames = 64;
  PyFrameObject* frames[kMaxFrames];
  int n = 0;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr && n < kMaxFrames) {
    frames[n++] = frame;
    frame = PyFrame_GetBack(frame);  // new reference
  }
  Py_XDECREF(frame);
  out.section(SectionTag::kStack);
  const size_t count = out.begin_count();
  std::string text;
  for (int i = n - 1; i >= 0; --i) {
    PyCodeObject* code = PyFrame_GetCode(frames[i]);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* name = PyUnicode_AsUTF8(code->co_name);
    text = "  File \"";
    text += file ? file : "?";
    text += "\", line " + std::to_string(PyFrame_GetLineNumber(frames[i])) + ", in ";
    text += name ? name : "?";
    text += '\n';
    out.text(text);
    Py_DECREF(code);
    Py_DECREF(frames[i]);
  }
  clear_error_keeping_stop_requests();
  out.end_container(count, static_cast<uint32_t>(n));
}

// Runs the tracker's hook with recording suspended, preserving any exception in flight; a failing hook
// never disturbs the traced call.
void run_var_hook(CallWrapper* self, const char* phase) {
  if (g_var_hook == nullptr) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  {
    InsideRecorder guard;
    PyObject* phase_str = PyUnicode_InternFromString(phase);
    PyObject* result = PyObject_CallFunctionObjArgs(g_var_hook, self->api_name, phase_str, nullptr);
    Py_XDECREF(phase_str);
    Py_XDECREF(result);
    clear_error_keeping_stop_requests();
  }
  PyErr_Restore(type, value, traceback);
}

// Whether Python frames run under another evaluator than CPython's own now: torch.compile installs its
// own while a compiled function runs (its graphs, and the eager code between them after a graph break).
// One pointer comparison, so every recorded call can ask.
bool under_compiler() {
  return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) != _PyEval_EvalFrameDefault;
}

void note_step(CallWrapper* self) {
  const int64_t step = Recorder::instance().current_step();
  if (step != self->last_step_called) {
    self->last_step_called = step;
    ++self->steps_called;
  }
}

PyObject* recorded_call(CallWrapper* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Recorder& recorder = Recorder::instance();
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  // States that changed before the call are written before it starts, so that only what the call
  // itself changes falls inside its window (APIContain: "Adam.step changes Parameter.data").
  if (self->options & kTrackVars) run_var_hook(self, "pre");
  const uint64_t call_ns = Recorder::next_call_ns();
  self->called = 1;
  note_step(self);
  EventInfo event{.kind = EventKind::kCallPre, .api_id = self->api_id, .time_ns = call_ns, .call_ns = call_ns};
  if ((self->options & kIsBoundMethod) && nargs > 0) {
    event.flags |= kBoundMethod | kHasObjId;
    event.obj_id = reinterpret_cast<uint64_t>(args[0]);
  } else if (self->options & kIsBoundMethod) {
    event.flags |= kBoundMethod;
  }
  if (under_compiler()) event.flags |= kUnderCompiler;
  if (self->options & (kDumpArgs | kDumpStack)) {
    PayloadEncoder& payload = tls_payload;
    payload.clear();
    {
      InsideRecorder guard;
      if (self->options & kDumpArgs) {
        const Py_ssize_t skip = (self->options & kOmitFirstArg) && nargs > 0 ? 1 : 0;
        capture_arguments(payload, args + skip, nargs - skip, kwnames,
                          self->has_arg_filter ? &self->arg_filter : nullptr);
      }
      if (self->options & kDumpStack) capture_stack(payload);
    }
    recorder.emit(event, payload.data(), payload.size());
  } else {
    recorder.emit(event);
  }

  PyObject* result = PyObject_Vectorcall(self->wrapped, args, nargsf, kwnames);
  if (self->options & kTrackVars) run_var_hook(self, "post");

  if (result == nullptr) {
    record_exception(event);
    return result;
  }
  event.kind = EventKind::kCallPost;
  if (self->options & kDumpReturn) {
    PayloadEncoder& payload = tls_payload;
    payload.clear();
    payload.section(SectionTag::kReturn);
    {
      InsideRecorder guard;
      capture_value(payload, result);
    }
    event.time_ns = monotonic_ns();
    recorder.emit(event, payload.data(), payload.size());
  } else {
    event.time_ns = monotonic_ns();
    recorder.emit(event);
  }
  return result;
}

// An API is rare when it ran in at most every second step so far (steps, not calls: model.eval() calls
// Module.train once per submodule). Once-per-step APIs are not (after step 2); once-per-epoch ones are,
// whatever the epoch length.
bool rare_call(const CallWrapper* self) {
  return 2 * static_cast<int64_t>(self->steps_called) <= Recorder::instance().current_step();
}

// Recording is off: a step sampled out, or disabled (by the script, or before recording starts). During
// a sampled-out step, rare calls and what they call are recorded. Every other call only counts its step,
// disabled ones included: otherwise a per-step API would look rare after a region the script disabled.
PyObject* unrecorded_step_call(CallWrapper* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (!tls_inside_recorder) {
    if (g_record_rare_calls.load(std::memory_order_relaxed)) {
      if (tls_rare_call_depth > 0) return recorded_call(self, args, nargsf, kwnames);
      if (rare_call(self)) {
        RareCallScope scope;
        return recorded_call(self, args, nargsf, kwnames);
      }
    }
    note_step(self);
  }
  return PyObject_Vectorcall(self->wrapped, args, nargsf, kwnames);
}

PyObject* wrapper_vectorcall(PyObject* obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  if (g_recording_enabled.load(std::memory_order_relaxed) && !tls_inside_recorder) {
    return recorded_call(self, args, nargsf, kwnames);
  }
  // A sampled-out call pays one more relaxed load here before the original runs.
  return unrecorded_step_call(self, args, nargsf, kwnames);
}

PyObject* wrapper_descr_get(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

// Attributes that describe the function: always the original's, never the wrapper type's.
bool delegated_name(PyObject* name) {
  static const char* const kNames[] = {
      "__name__",     "__qualname__", "__doc__",     "__module__",   "__defaults__",     "__kwdefaults__",
      "__code__",     "__globals__",  "__closure__", "__self__",     "__annotations__",  "__text_signature__",
      "__signature__", "__class__",   "__func__",    "__type_params__",
  };
  const char* s = PyUnicode_AsUTF8(name);
  if (s == nullptr || s[0] != '_' || s[1] != '_') {
    clear_error_keeping_stop_requests();
    return false;
  }
  for (const char* n : kNames) {
    if (std::strcmp(s, n) == 0) return true;
  }
  return false;
}

PyObject* wrapper_getattro(PyObject* obj, PyObject* name) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  if (delegated_name(name)) return PyObject_GetAttr(self->wrapped, name);
  PyObject* found = PyObject_GenericGetAttr(obj, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  PyErr_Clear();  // the AttributeError just matched
  return PyObject_GetAttr(self->wrapped, name);
}

int wrapper_setattro(PyObject* obj, PyObject* name, PyObject* value) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  if (delegated_name(name)) return PyObject_SetAttr(self->wrapped, name, value);
  return PyObject_GenericSetAttr(obj, name, value);
}

PyObject* wrapper_repr(PyObject* obj) { return PyObject_Repr(reinterpret_cast<CallWrapper*>(obj)->wrapped); }

Py_hash_t wrapper_hash(PyObject* obj) { return PyObject_Hash(reinterpret_cast<CallWrapper*>(obj)->wrapped); }

// A wrapper equals its original, so torch's tables keyed by functions (torch.overrides) still match.
PyObject* wrapper_richcompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  PyObject* left = is_wrapper(a) ? wrapped_of(a) : a;
  PyObject* right = is_wrapper(b) ? wrapped_of(b) : b;
  const bool same = left == right;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

// pickle and copy reduce a wrapper as its original would be: a builtin by its own __reduce__ (which
// names its owner), a Python function by its qualified name, which pickle resolves back to this wrapper.
PyObject* wrapper_reduce(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  if (PyCFunction_Check(self->wrapped)) return PyObject_CallMethod(self->wrapped, "__reduce__", nullptr);
  return PyObject_GetAttrString(self->wrapped, "__qualname__");
}

PyObject* wrapper_get_wrapped(PyObject* obj, void*) {
  PyObject* w = reinterpret_cast<CallWrapper*>(obj)->wrapped;
  Py_INCREF(w);
  return w;
}

int wrapper_traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  Py_VISIT(Py_TYPE(obj));
  Py_VISIT(self->wrapped);
  Py_VISIT(self->dict);
  Py_VISIT(self->api_name);
  Py_VISIT(self->arg_filter.keywords);
  return 0;
}

int wrapper_clear(PyObject* obj) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  Py_CLEAR(self->wrapped);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->api_name);
  Py_CLEAR(self->arg_filter.keywords);
  return 0;
}

void wrapper_dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<CallWrapper*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  if (self->weakrefs != nullptr) PyObject_ClearWeakRefs(obj);
  wrapper_clear(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyMethodDef kMethods[] = {
    {"__reduce__", wrapper_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"__wrapped__", wrapper_get_wrapped, nullptr, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CallWrapper, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(CallWrapper, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CallWrapper, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyTypeObject* make_type(const char* name, bool binds) {
  static PyType_Slot function_slots[] = {
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_descr_get, reinterpret_cast<void*>(wrapper_descr_get)},
      {Py_tp_getattro, reinterpret_cast<void*>(wrapper_getattro)},
      {Py_tp_setattro, reinterpret_cast<void*>(wrapper_setattro)},
      {Py_tp_repr, reinterpret_cast<void*>(wrapper_repr)},
      {Py_tp_hash, reinterpret_cast<void*>(wrapper_hash)},
      {Py_tp_richcompare, reinterpret_cast<void*>(wrapper_richcompare)},
      {Py_tp_traverse, reinterpret_cast<void*>(wrapper_traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(wrapper_clear)},
      {Py_tp_dealloc, reinterpret_cast<void*>(wrapper_dealloc)},
      {Py_tp_methods, kMethods},
      {Py_tp_getset, kGetSet},
      {Py_tp_members, kMembers},
      {0, nullptr},
  };
  // Same slots minus tp_descr_get: a builtin stored on a class must not start binding self.
  static PyType_Slot builtin_slots[sizeof function_slots / sizeof function_slots[0]];
  size_t j = 0;
  for (const PyType_Slot& s : function_slots) {
    if (s.slot != Py_tp_descr_get) builtin_slots[j++] = s;
  }
  unsigned long flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  if (binds) flags |= Py_TPFLAGS_METHOD_DESCRIPTOR;
  PyType_Spec spec = {name, sizeof(CallWrapper), 0, static_cast<unsigned int>(flags),
                      binds ? function_slots : builtin_slots};
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
}

}  // namespace

bool add_wrapper_types(PyObject* module) {
  g_function_wrapper_type = make_type("traincheck._core.FunctionWrapper", true);
  g_builtin_wrapper_type = make_type("traincheck._core.BuiltinWrapper", false);
  if (g_function_wrapper_type == nullptr || g_builtin_wrapper_type == nullptr) return false;
  Py_INCREF(g_function_wrapper_type);
  Py_INCREF(g_builtin_wrapper_type);
  return PyModule_AddObject(module, "FunctionWrapper", reinterpret_cast<PyObject*>(g_function_wrapper_type)) == 0 &&
         PyModule_AddObject(module, "BuiltinWrapper", reinterpret_cast<PyObject*>(g_builtin_wrapper_type)) == 0;
}

PyObject* make_wrapper(PyObject* original, const char* api_name, bool binds, uint8_t options,
                       const ArgumentFilter* arg_filter) {
  PyTypeObject* type = binds ? g_function_wrapper_type : g_builtin_wrapper_type;
  auto* self = PyObject_GC_New(CallWrapper, type);
  if (self == nullptr) return nullptr;
  self->vectorcall = wrapper_vectorcall;
  Py_INCREF(original);
  self->wrapped = original;
  self->dict = nullptr;
  self->weakrefs = nullptr;
  self->has_arg_filter = arg_filter != nullptr;
  self->arg_filter = arg_filter != nullptr ? *arg_filter : ArgumentFilter{};
  Py_XINCREF(self->arg_filter.keywords);
  self->api_name = PyUnicode_FromString(api_name);
  if (self->api_name == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  self->api_id = Recorder::instance().intern_name(api_name);
  self->options = options;
  self->called = 0;
  self->steps_called = 0;
  self->last_step_called = -1;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return reinterpret_cast<PyObject*>(self);
}

void set_var_hook(PyObject* hook) {
  PyObject* fresh = hook == Py_None ? nullptr : hook;
  Py_XINCREF(fresh);
  Py_XSETREF(g_var_hook, fresh);
}

bool set_inside_recorder(bool inside) {
  const bool previous = tls_inside_recorder;
  tls_inside_recorder = inside;
  return previous;
}

bool is_wrapper(PyObject* obj) {
  return Py_IS_TYPE(obj, g_function_wrapper_type) || Py_IS_TYPE(obj, g_builtin_wrapper_type);
}

PyObject* wrapped_of(PyObject* wrapper) { return reinterpret_cast<CallWrapper*>(wrapper)->wrapped; }

bool was_called(PyObject* wrapper) { return reinterpret_cast<CallWrapper*>(wrapper)->called != 0; }

}  // namespace traincheck
