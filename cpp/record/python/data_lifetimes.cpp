#include "record/python/data_lifetimes.h"

#include <unordered_map>

#include "record/python/clear_error.h"

namespace traincheck {

namespace {

// User-space addresses fit in 48 bits; bits 48..62 carry the lifetime, so an identity stays a positive
// int64 (the trace's integers) and its low bits still read as the address.
constexpr int kLifetimeShift = 48;
constexpr uint64_t kLifetimeMask = 0x7FFF;

struct Pairing {
  uint64_t identity;
  PyObject* weakref;  // owned; its callback ends the pairing
};

struct Table {
  std::unordered_map<uint64_t, Pairing> by_address;
  std::unordered_map<PyObject*, uint64_t> address_of_weakref;
  uint64_t lifetimes = 0;  // pairings made: consecutive storages at one address differ in it
  PyObject* on_freed = nullptr;
};

Table& table() {
  static auto* t = new Table();  // never destroyed: callbacks may run during interpreter teardown
  return *t;
}

// The weak reference's callback: the storage paired with an address was freed.
PyObject* storage_freed(PyObject*, PyObject* weakref) {
  Table& t = table();
  auto it = t.address_of_weakref.find(weakref);
  if (it != t.address_of_weakref.end()) {
    auto pairing = t.by_address.find(it->second);
    if (pairing != t.by_address.end() && pairing->second.weakref == weakref) t.by_address.erase(pairing);
    t.address_of_weakref.erase(it);
    Py_DECREF(weakref);
  }
  Py_RETURN_NONE;
}

PyMethodDef g_storage_freed_def = {"_traincheck_storage_freed", storage_freed, METH_O, nullptr};

}  // namespace

uint64_t data_lifetime_identity(PyObject* tensor, uint64_t address, PyObject* storage_of) {
  Table& t = table();
  auto found = t.by_address.find(address);
  if (found != t.by_address.end()) return found->second.identity;
  if (storage_of == nullptr) return address;
  if (t.on_freed == nullptr) {
    t.on_freed = PyCFunction_New(&g_storage_freed_def, nullptr);
    if (t.on_freed == nullptr) {
      clear_error_keeping_stop_requests();
      return address;
    }
  }
  PyObject* storage = PyObject_CallOneArg(storage_of, tensor);
  if (storage == nullptr) {
    clear_error_keeping_stop_requests();
    return address;
  }
  PyObject* weakref = PyWeakref_NewRef(storage, t.on_freed);
  Py_DECREF(storage);  // torch keeps the storage's Python object as long as the storage itself
  if (weakref == nullptr) {
    clear_error_keeping_stop_requests();
    return address;
  }
  const uint64_t lifetime = ++t.lifetimes & kLifetimeMask;
  const uint64_t identity = address ^ (lifetime << kLifetimeShift);
  t.by_address.emplace(address, Pairing{identity, weakref});
  t.address_of_weakref.emplace(weakref, address);
  return identity;
}

size_t data_lifetimes_tracked() { return table().by_address.size(); }

}  // namespace traincheck
