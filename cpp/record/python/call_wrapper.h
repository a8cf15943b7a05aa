// The C-level callable that replaces a torch function or method (docs/README.md §Architecture).
//
// Two Python types share one implementation:
//  - FunctionWrapper binds like a Python function (tp_descr_get, Py_TPFLAGS_METHOD_DESCRIPTOR), for
//    functions stored in class dicts, so `x.method()` passes self and avoids a bound method per call;
//  - BuiltinWrapper does not bind, for builtins and functions stored in module dicts or wrapped in
//    staticmethod.
// Both delegate __name__, __qualname__, __doc__, __module__, ... to the original, expose __wrapped__,
// support weak references and a __dict__, compare and hash like the original, and pickle by name.
#pragma once

#include <Python.h>

#include <cstdint>

#include "record/python/value_capture.h"

namespace traincheck {

// Every wrapper records its calls: what need not be recorded is not wrapped at all (docs/README.md
// §Rules of the hot path, rule 3), so there is no pass-through option to test per call.
enum WrapperOptions : uint8_t {
  kDumpArgs = 1 << 1,       // capture arguments into the pre event
  kDumpReturn = 1 << 2,     // capture the return value into the post event
  kIsBoundMethod = 1 << 3,  // first parameter is self: obj_id = id(args[0])
  kDumpStack = 1 << 4,      // add the caller's Python stack to the pre event (--API-dump-stack-trace)
  kTrackVars = 1 << 5,      // call the variable hook before and after the call (selective var dumps)
  kOmitFirstArg = 1 << 6,   // a classmethod's cls: the original sees the bound method, without it
};

// The tracker's hook, called as hook(api_name, "pre" | "post") around calls of kTrackVars wrappers.
void set_var_hook(PyObject* hook);

// Marks the calling thread as inside the tool, so torch calls it makes (the tracker's digests) are not
// recorded. Returns the previous state.
bool set_inside_recorder(bool inside);

// Registers both types on `module`. Returns false with a Python error set on failure.
bool add_wrapper_types(PyObject* module);

// New reference to a wrapper of `original`. `binds` selects FunctionWrapper over BuiltinWrapper. With
// kDumpArgs, `arg_filter` (copied; null: every argument) selects which arguments are recorded.
PyObject* make_wrapper(PyObject* original, const char* api_name, bool binds, uint8_t options,
                       const ArgumentFilter* arg_filter = nullptr);

bool is_wrapper(PyObject* obj);
PyObject* wrapped_of(PyObject* wrapper);  // borrowed
bool was_called(PyObject* wrapper);       // recorded at least one call

}  // namespace traincheck
