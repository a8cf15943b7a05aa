#include "record/python/clear_error.h"

#include <csignal>

namespace traincheck {
namespace {

// A pending call: raises the exception it was given (its reference is passed in and consumed).
int raise_again(void* exception) {
  PyObject* value = static_cast<PyObject*>(exception);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value)), value);
  Py_DECREF(value);
  return -1;
}

// Signal handlers run in the main thread only: a stop request raised by another thread is that thread's.
bool on_main_thread() {
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* main = threading ? PyObject_CallMethod(threading, "main_thread", nullptr) : nullptr;
  PyObject* ident = main ? PyObject_GetAttrString(main, "ident") : nullptr;
  const bool result = ident != nullptr && PyLong_AsUnsignedLong(ident) == PyThread_get_thread_ident();
  Py_XDECREF(ident);
  Py_XDECREF(main);
  Py_XDECREF(threading);
  PyErr_Clear();
  return result;
}

bool is_stop_request(PyObject* type) {
  return PyErr_GivenExceptionMatches(type, PyExc_KeyboardInterrupt) ||
         PyErr_GivenExceptionMatches(type, PyExc_SystemExit);
}

}  // namespace

void clear_error_keeping_stop_requests() {
  PyObject* type = PyErr_Occurred();  // borrowed
  if (type == nullptr) return;
  if (!is_stop_request(type)) {
    PyErr_Clear();
    return;
  }
  PyObject *raised_type, *value, *traceback;
  PyErr_Fetch(&raised_type, &value, &traceback);
  PyErr_NormalizeException(&raised_type, &value, &traceback);
  Py_XDECREF(raised_type);
  Py_XDECREF(traceback);
  if (value == nullptr || !on_main_thread()) {
    Py_XDECREF(value);
    return;
  }
  PyException_SetTraceback(value, Py_None);  // its traceback will be the script's, where it is raised again
  if (Py_AddPendingCall(raise_again, value) != 0) {
    // The queue is full: a Ctrl-C is still delivered as the signal again; nothing else can be kept.
    const bool interrupt = PyErr_GivenExceptionMatches(value, PyExc_KeyboardInterrupt);
    Py_DECREF(value);
    if (interrupt) PyErr_SetInterruptEx(SIGINT);
  }
}

}  // namespace traincheck
