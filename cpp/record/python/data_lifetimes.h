// A tensor's identity in records (_TRAINCHECK_data_ID): its data address, told apart from the data that
// held the same address before it (docs/formats.md §Argument and return values).
//
// An address alone is reused as soon as its storage is freed: under no_grad, the hidden states of one
// evaluation pass are freed before the next pass allocates its own at the same address, so two calls of
// one step looked as if they received the same tensor, and whether they did followed the allocator's
// choices run by run (DistinctArgument alarms on correct runs). Each address is therefore
// paired with the lifetime of the storage seen there: a weak reference to torch's storage object (which
// torch keeps alive exactly as long as the storage) drops the pairing when the storage is freed, and the
// next storage at that address gets a new identity. Views of one storage that start at one address, and
// `.data` views of one parameter, keep one identity for as long as that storage lives.
//
// Only touched with the GIL held (recording and the weak reference callbacks run under it).
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

namespace traincheck {

// The identity of the data of `tensor` (a torch tensor) at `address` (its data_ptr, not 0). `storage_of`
// is torch's TensorBase.untyped_storage. Where the storage cannot be reached or weakly referenced, the
// address itself (the identity as it was before lifetimes).
uint64_t data_lifetime_identity(PyObject* tensor, uint64_t address, PyObject* storage_of);

// Storages currently paired with an address (tests: the table shrinks as storages are freed).
size_t data_lifetimes_tracked();

}  // namespace traincheck
