// Binary layout of recorded events, shared by the training-thread encoder and the writer's formatter.
//
// An event is a fixed 48-byte header followed by an optional payload of tagged values (arguments,
// return values, exception text). Events are 8-byte aligned and never span two chunks of a stream.
// Strings that repeat (API names, type names, dtype names, meta-var snapshots) are interned ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string_view>

#include "record/step_claims.h"

namespace traincheck {

enum class EventKind : uint8_t {
  kCallPre = 1,
  kCallPost = 2,
  kCallException = 3,
  kVarState = 4,  // a state_change record: api_id names the variable, payload = kVarState section
};

enum EventFlags : uint8_t {
  kHasObjId = 1 << 0,     // bound method: obj_id = id(self)
  kBoundMethod = 1 << 1,  // is_bound_method in the record
  // A call made while another frame evaluator than CPython's runs Python frames (torch.compile's, between
  // the graphs of a compiled function): the Python functions it calls may run as compiled graphs, whose
  // calls are not recorded. The pre-record says `"compiled": true`; what it contains is not judged.
  kUnderCompiler = 1 << 2,
};
// The payload describes itself (SectionTag), so no flag says what it holds.

struct EventHeader {
  uint32_t size;     // whole event in bytes, header included, multiple of 8
  EventKind kind;
  uint8_t flags;
  uint16_t reserved;
  uint32_t api_id;   // interned API name
  uint32_t meta_id;  // interned meta_vars members other than "step" (JSON members text, maybe empty)
  uint64_t time_ns;  // when this event happened
  uint64_t call_ns;  // the call's pre time: with the thread's uuid it forms func_call_id
  uint64_t obj_id;   // id(self) for bound methods
  int64_t step;      // meta_vars.step: kept out of meta_id, which would otherwise intern a snapshot per step
};
static_assert(sizeof(EventHeader) == 48);

inline constexpr uint32_t align8(uint32_t n) { return (n + 7u) & ~7u; }

// Payload value tags. A value is a tag byte followed by its data (unaligned, read with memcpy).
enum class ValueTag : uint8_t {
  kNone = 1,
  kFalse = 2,
  kTrue = 3,
  kInt = 4,         // int64
  kFloat = 5,       // double
  kStr = 6,         // u32 length + bytes; written as {"str": "..."}
  kBigInt = 7,      // u32 length + decimal digits (Python ints beyond int64)
  kTensor = 8,      // TensorSummary + ndim x int64 dims [+ a kDict when kTensorHasToolAttributes]
  kObject = 9,      // u32 type-name id: {"<type>": {}}
  kNamedValue = 10, // u32 type-name id + u32 text id: {"<type>": "<text>"} (torch.dtype, torch.device)
  kList = 11,       // u32 count + values
  kTuple = 12,      // u32 count + values
  kDict = 13,       // u32 count + (kStr-less key: u32 length + bytes, value) pairs
  kTruncated = 14,  // stands for elements left out of a long container
  kModule = 15,     // u32 type-name id + u8 training flag: {"<type>": {"training": <bool>}} (an nn.Module)
};

enum TensorFlags : uint16_t {
  kTensorRequiresGrad = 1 << 0,
  kTensorIsLeaf = 1 << 1,
  kTensorRetainsGrad = 1 << 2,
  kTensorIsParameter = 1 << 3,
  kTensorHasGrad = 1 << 4,
  kTensorHasGradFn = 1 << 5,
  kTensorIsCuda = 1 << 6,
  kTensorIsCpu = 1 << 7,
  kTensorIsMeta = 1 << 8,
  kTensorIsSparse = 1 << 9,
  kTensorIsQuantized = 1 << 10,
  kTensorHasToolAttributes = 1 << 11,  // _TRAINCHECK_* attributes set on the tensor object (a kDict follows)
};

struct TensorSummary {
  uint32_t dtype_name_id;  // "torch.float32"
  uint16_t flags;          // TensorFlags
  uint16_t ndim;
  uint32_t itemsize;
  uint32_t reserved;
  uint64_t data_id;        // the address of the tensor's data, id(tensor) without one (value_capture.cpp)
  uint64_t grad_id;        // the same of tensor.grad, when kTensorHasGrad
};
static_assert(sizeof(TensorSummary) == 32);

// Sections of a call payload, in this order when present.
enum class SectionTag : uint8_t {
  kArgs = 0x40,       // u32 positional count + (u32 index, value), u32 keyword count + (u32 len + name, value);
                      // indices are explicit because selective mode records only the arguments invariants name
  kReturn = 0x41,     // one value
  kException = 0x42,  // u32 len + type name, u32 len + message
  kStack = 0x43,      // u32 count + (u32 len + frame text), outermost frame first
  kVarState = 0x44,   // VarStateHeader + tensor dims + optional kDict of user attributes
};

enum VarStateFlags : uint32_t {
  kVarHasDataDigest = 1 << 0,
  kVarHasGradDigest = 1 << 1,
  kVarHasUserAttributes = 1 << 2,  // a kDict value follows the dims
  // The step claims' bits (record/step_claims.h) follow, two per claim: claim_made_flag(bit) when the
  // record makes the claim, claim_holds_flag(bit) when it holds.
  kFirstStepClaimFlagShift = 3,
};

constexpr uint32_t claim_made_flag(uint32_t bit) { return uint32_t{1} << (kFirstStepClaimFlagShift + 2 * bit); }
constexpr uint32_t claim_holds_flag(uint32_t bit) { return claim_made_flag(bit) << 1; }
static_assert(kFirstStepClaimFlagShift + 2 * kStepClaimCount <= 32,
              "VarStateHeader::flags has no room for another step claim");

// A tracked variable's state (docs/formats.md §Variable state records). Tensor attributes reuse
// TensorSummary.
struct VarStateHeader {
  uint32_t var_type_id;   // "torch.nn.Parameter"
  uint32_t mode_id;       // 0: no "mode" key (sampler style)
  uint32_t dump_loc_id;   // 0: no "dump_loc" key
  uint32_t flags;         // VarStateFlags
  int64_t data_digest;
  int64_t grad_digest;
  TensorSummary tensor;   // followed by tensor.ndim x int64 dims
};
static_assert(sizeof(VarStateHeader) == 64);

}  // namespace traincheck
