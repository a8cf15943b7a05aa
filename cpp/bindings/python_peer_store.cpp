#include "bindings/python_peer_store.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

namespace nb = nanobind;

namespace traincheck {

namespace {

// Whether Python can still run code: Py_IsFinalizing is public from 3.13 on, _Py_IsFinalizing before.
bool python_running() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Runs `call` with the GIL held, as a std::exception on failure: a Python error (the store's connection
// closed, a timeout) becomes a runtime_error with its message, raised after the GIL is released so that
// the exchange never holds it while it handles the error. No call once the interpreter is shutting down.
template <typename Call>
auto with_gil(Call&& call) -> decltype(call()) {
  if (!python_running()) throw std::runtime_error("the Python interpreter is shutting down");
  std::string failure;
  {
    nb::gil_scoped_acquire gil;
    try {
      return call();
    } catch (nb::python_error& e) {
      failure = e.what();
    } catch (const nb::cast_error&) {
      failure = "the store returned a value of an unexpected type";
    }
  }
  throw std::runtime_error(failure);
}

}  // namespace

PythonPeerStore::PythonPeerStore(nb::object resolve) : resolve_(std::move(resolve)) {}

PythonPeerStore::~PythonPeerStore() {
  // The session owning this is never freed while Python runs (online_module.cpp); if it ever is, the
  // references must be dropped with the GIL held, and not at all once Python is gone.
  if (!python_running()) {
    (void)resolve_.release();
    (void)store_.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  resolve_.reset();
  store_.reset();
}

std::optional<PeerGroup> PythonPeerStore::connect() {
  return with_gil([&]() -> std::optional<PeerGroup> {
    nb::object found = resolve_();
    if (found.is_none()) return std::nullopt;
    nb::tuple t = nb::cast<nb::tuple>(found);
    store_ = t[0];
    return PeerGroup{nb::cast<int>(t[1]), nb::cast<int>(t[2])};
  });
}

void PythonPeerStore::multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  with_gil([&] {
    nb::list data;
    for (const std::string& v : values) data.append(nb::bytes(v.data(), v.size()));
    store_.attr("multi_set")(keys, data);
    return 0;
  });
}

bool PythonPeerStore::check(const std::vector<std::string>& keys) {
  return with_gil([&] { return nb::cast<bool>(store_.attr("check")(keys)); });
}

std::vector<std::string> PythonPeerStore::multi_get(const std::vector<std::string>& keys) {
  return with_gil([&] {
    std::vector<std::string> out;
    for (nb::handle v : store_.attr("multi_get")(keys)) {
      nb::bytes b = nb::cast<nb::bytes>(v);
      out.emplace_back(b.c_str(), b.size());
    }
    return out;
  });
}

void PythonPeerStore::erase(const std::string& key) {
  with_gil([&] {
    store_.attr("delete_key")(key);
    return 0;
  });
}

std::string PythonPeerStore::set_if_absent(const std::string& key, const std::string& value) {
  // c10d's compare_set: with an empty expected value, sets a key that does not exist and returns the
  // value it holds after the call.
  return with_gil([&] {
    nb::bytes b = nb::cast<nb::bytes>(store_.attr("compare_set")(key, nb::bytes("", 0), nb::bytes(value.data(), value.size())));
    return std::string(b.c_str(), b.size());
  });
}

}  // namespace traincheck
