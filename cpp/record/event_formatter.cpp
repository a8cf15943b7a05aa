#include "record/event_formatter.h"

#include <cstring>

#include "common/assert.h"
#include "common/json_writer.h"
#include "record/event_format.h"

namespace traincheck {

namespace {

// Sequential reader over a payload; the encoder guarantees well-formed input, so bounds are asserted
// by construction rather than checked per byte.
class PayloadReader {
 public:
  PayloadReader(const std::byte* p, const std::byte* end) : p_(p), end_(end) {}
  bool at_end() const { return p_ >= end_; }
  uint8_t u8() { return static_cast<uint8_t>(*p_++); }
  template <class T>
  T read() {
    T v;
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  std::string_view bytes() {
    const uint32_t n = read<uint32_t>();
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }

 private:
  const std::byte* p_;
  const std::byte* end_;
};

struct DtypeNames {
  std::string_view dtype;
  std::string_view tensor;
};
constexpr DtypeNames kTensorNames[] = {
    {"torch.float32", "FloatTensor"},   {"torch.float64", "DoubleTensor"},
    {"torch.float16", "HalfTensor"},    {"torch.bfloat16", "BFloat16Tensor"},
    {"torch.int64", "LongTensor"},      {"torch.int32", "IntTensor"},
    {"torch.int16", "ShortTensor"},     {"torch.int8", "CharTensor"},
    {"torch.uint8", "ByteTensor"},      {"torch.bool", "BoolTensor"},
    {"torch.complex64", "ComplexFloatTensor"}, {"torch.complex128", "ComplexDoubleTensor"},
};

void format_value(std::string& out, PayloadReader& in, const FormatContext& ctx);
void append_dict_members(std::string& out, PayloadReader& in, const FormatContext& ctx);

// The JSON-native form of a value inside a container (json.dumps would have accepted it), or the typed
// {"<type>": payload} form for everything else.
void format_element(std::string& out, PayloadReader& in, const FormatContext& ctx);

// The inside of a tensor's attribute object (docs/formats.md §Argument and return values).
// `data_digest`/`grad_digest` are given for tracked variables (docs/formats.md §Variable state records): then
// "data" and "grad" hold digests instead of being absent / null.
void append_tensor_attributes(std::string& out, const TensorSummary& t, PayloadReader& dims_in,
                              const FormatContext& ctx, const int64_t* data_digest, const int64_t* grad_digest) {
  out += "\"_TRAINCHECK_data_ID\":";
  append_json_uint(out, t.data_id);
  if (data_digest) {
    out += ",\"data\":";
    append_json_int(out, *data_digest);
  }
  if (t.flags & kTensorHasGrad) {
    out += ",\"_TRAINCHECK_grad_ID\":";
    append_json_uint(out, t.grad_id);
  }
  out += ",\"dtype\":";
  append_json_string(out, ctx.names.get(t.dtype_name_id));
  // The original's one-level dump keeps None as null and drops other objects (a grad tensor appears
  // through its _TRAINCHECK_grad_ID, or its digest for tracked variables; a grad_fn node not at all).
  if (grad_digest) {
    out += ",\"grad\":";
    append_json_int(out, *grad_digest);
  } else if (!(t.flags & kTensorHasGrad)) {
    out += ",\"grad\":null";
  }
  if (!(t.flags & kTensorHasGradFn)) out += ",\"grad_fn\":null";
  out += ",\"is_cpu\":";
  append_json_bool(out, t.flags & kTensorIsCpu);
  out += ",\"is_cuda\":";
  append_json_bool(out, t.flags & kTensorIsCuda);
  out += ",\"is_leaf\":";
  append_json_bool(out, t.flags & kTensorIsLeaf);
  out += ",\"is_meta\":";
  append_json_bool(out, t.flags & kTensorIsMeta);
  out += ",\"is_quantized\":";
  append_json_bool(out, t.flags & kTensorIsQuantized);
  out += ",\"is_sparse\":";
  append_json_bool(out, t.flags & kTensorIsSparse);
  out += ",\"itemsize\":";
  append_json_uint(out, t.itemsize);
  uint64_t numel = 1;
  std::string shape = "[";
  for (uint16_t i = 0; i < t.ndim; ++i) {
    const int64_t d = dims_in.read<int64_t>();
    numel *= static_cast<uint64_t>(d < 0 ? 0 : d);
    if (i) shape += ',';
    append_json_int(shape, d);
  }
  shape += ']';
  out += ",\"name\":null,\"nbytes\":";
  append_json_uint(out, numel * t.itemsize);
  out += ",\"ndim\":";
  append_json_uint(out, t.ndim);
  out += ",\"requires_grad\":";
  append_json_bool(out, t.flags & kTensorRequiresGrad);
  out += ",\"retains_grad\":";
  append_json_bool(out, t.flags & kTensorRetainsGrad);
  out += ",\"shape\":";
  out += shape;
}

void format_tensor_body(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  const auto t = in.read<TensorSummary>();
  out += '{';
  append_json_string(out, (t.flags & kTensorIsParameter)
                              ? std::string("torch.nn.Parameter")
                              : tensor_type_name(ctx.names.get(t.dtype_name_id), t.flags & kTensorIsCuda));
  out += ":{";
  append_tensor_attributes(out, t, in, ctx, nullptr, nullptr);
  if (t.flags & kTensorHasToolAttributes) append_dict_members(out, in, ctx);
  out += "}}";
}

void format_container(std::string& out, PayloadReader& in, const FormatContext& ctx, ValueTag tag) {
  const uint32_t n = in.read<uint32_t>();
  out += '[';
  for (uint32_t i = 0; i < n; ++i) {
    if (i) out += ',';
    format_element(out, in, ctx);
  }
  out += ']';
}

void format_dict(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  const uint32_t n = in.read<uint32_t>();
  out += '{';
  for (uint32_t i = 0; i < n; ++i) {
    if (i) out += ',';
    append_json_string(out, in.bytes());
    out += ':';
    format_element(out, in, ctx);
  }
  out += '}';
}

// A kDict value's members appended to an object being written (after a comma when there are any).
void append_dict_members(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  std::string dict;
  in.u8();  // ValueTag::kDict
  format_dict(dict, in, ctx);
  if (dict.size() > 2) {
    out += ',';
    out.append(dict, 1, dict.size() - 2);
  }
}

void format_element(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  const auto tag = static_cast<ValueTag>(in.u8());
  switch (tag) {
    case ValueTag::kNone: out += "null"; return;
    case ValueTag::kFalse: out += "false"; return;
    case ValueTag::kTrue: out += "true"; return;
    case ValueTag::kInt: append_json_int(out, in.read<int64_t>()); return;
    case ValueTag::kFloat: append_json_double(out, in.read<double>()); return;
    case ValueTag::kStr: append_json_string(out, in.bytes()); return;
    case ValueTag::kBigInt: out += in.bytes(); return;
    case ValueTag::kList:
    case ValueTag::kTuple: format_container(out, in, ctx, tag); return;
    case ValueTag::kDict: format_dict(out, in, ctx); return;
    case ValueTag::kTruncated: out += "\"...\""; return;
    default: break;
  }
  // Non-JSON values keep their typed form inside containers.
  switch (tag) {
    case ValueTag::kTensor: format_tensor_body(out, in, ctx); return;
    case ValueTag::kObject:
      out += '{';
      append_json_string(out, ctx.names.get(in.read<uint32_t>()));
      out += ":{}}";
      return;
    case ValueTag::kModule: {
      out += '{';
      append_json_string(out, ctx.names.get(in.read<uint32_t>()));
      out += in.u8() ? ":{\"training\":true}}" : ":{\"training\":false}}";
      return;
    }
    case ValueTag::kNamedValue: {
      out += '{';
      append_json_string(out, ctx.names.get(in.read<uint32_t>()));
      out += ':';
      append_json_string(out, ctx.names.get(in.read<uint32_t>()));
      out += '}';
      return;
    }
    default: out += "null"; return;
  }
}

const char* json_type_name(ValueTag tag) {
  switch (tag) {
    case ValueTag::kNone: return "NoneType";
    case ValueTag::kFalse:
    case ValueTag::kTrue: return "bool";
    case ValueTag::kInt:
    case ValueTag::kBigInt: return "int";
    case ValueTag::kFloat: return "float";
    case ValueTag::kStr: return "str";
    case ValueTag::kList: return "list";
    case ValueTag::kTuple: return "tuple";
    case ValueTag::kDict: return "dict";
    default: return nullptr;
  }
}

// A top-level argument or return value: always {"<type>": payload}
// (docs/formats.md §Argument and return values).
void format_value(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  PayloadReader peek = in;
  const auto tag = static_cast<ValueTag>(peek.u8());
  if (const char* type = json_type_name(tag)) {
    out += "{\"";
    out += type;
    out += "\":";
    format_element(out, in, ctx);
    out += '}';
  } else {
    format_element(out, in, ctx);
  }
}

void format_args(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  const uint32_t npos = in.read<uint32_t>();
  out += ",\"args\":{";
  for (uint32_t i = 0; i < npos; ++i) {
    if (i) out += ',';
    out += '"';
    append_json_uint(out, in.read<uint32_t>());
    out += "\":";
    format_value(out, in, ctx);
  }
  const uint32_t nkw = in.read<uint32_t>();
  out += "},\"kwargs\":{";
  for (uint32_t i = 0; i < nkw; ++i) {
    if (i) out += ',';
    append_json_string(out, in.bytes());
    out += ':';
    format_value(out, in, ctx);
  }
  out += '}';
}

void format_return(std::string& out, PayloadReader& in, const FormatContext& ctx) {
  out += ",\"return_values\":";
  PayloadReader peek = in;
  if (static_cast<ValueTag>(peek.u8()) == ValueTag::kTuple) {
    // A tuple result is a list of separately typed items (docs/formats.md §API records).
    in.u8();
    const uint32_t n = in.read<uint32_t>();
    out += '[';
    for (uint32_t i = 0; i < n; ++i) {
      if (i) out += ',';
      format_value(out, in, ctx);
    }
    out += ']';
  } else {
    format_value(out, in, ctx);
  }
}

const char* type_string(EventKind kind) {
  switch (kind) {
    case EventKind::kCallPre: return "function_call (pre)";
    case EventKind::kCallPost: return "function_call (post)";
    case EventKind::kCallException: return "function_call (post) (exception)";
    case EventKind::kVarState: return "state_change";
  }
  return "unknown";
}

// "meta_vars": the step from the header first, then the published members (stage, user keys).
void append_meta_vars(std::string& out, const EventHeader& h, const FormatContext& ctx) {
  out += ",\"meta_vars\":{\"step\":";
  append_json_int(out, h.step);
  const std::string_view members = h.meta_id == StringTable::kInvalid ? std::string_view() : ctx.metas.get(h.meta_id);
  if (!members.empty()) {
    out += ',';
    out += members;
  }
  out += '}';
}

void append_common_keys(std::string& out, const EventHeader& h, const FormatContext& ctx) {
  out += ",\"process_id\":";
  append_json_uint(out, ctx.process_id);
  out += ",\"thread_id\":";
  append_json_uint(out, ctx.thread_id);
  append_meta_vars(out, h, ctx);
}

// A state_change record (docs/formats.md §Variable state records).
void format_var_event(std::string& out, const EventHeader& h, PayloadReader& in, const FormatContext& ctx) {
  in.u8();  // SectionTag::kVarState
  const auto v = in.read<VarStateHeader>();
  out += "{\"var_name\":";
  append_json_string(out, ctx.names.get(h.api_id));
  out += ",\"var_type\":";
  append_json_string(out, ctx.names.get(v.var_type_id));
  if (v.mode_id) {
    out += ",\"mode\":";
    append_json_string(out, ctx.names.get(v.mode_id));
  }
  if (v.dump_loc_id) {
    out += ",\"dump_loc\":";
    append_json_string(out, ctx.names.get(v.dump_loc_id));
  }
  append_common_keys(out, h, ctx);
  out += ",\"type\":\"state_change\",\"attributes\":{";
  append_tensor_attributes(out, v.tensor, in, ctx, (v.flags & kVarHasDataDigest) ? &v.data_digest : nullptr,
                           (v.flags & kVarHasGradDigest) ? &v.grad_digest : nullptr);
  // User attributes set on the parameter object (Megatron's tensor_model_parallel, ...), merged in.
  if (v.flags & kVarHasUserAttributes) append_dict_members(out, in, ctx);
  for (const StepClaim& claim : kStepClaims)
    if (v.flags & claim_made_flag(claim.bit)) {
      out += ",\"";
      out += claim.attribute;
      out += "\":";
      append_json_bool(out, v.flags & claim_holds_flag(claim.bit));
    }
  out += "},\"time\":";
  append_json_uint(out, h.time_ns);
  out += "}\n";
}

}  // namespace

std::string tensor_type_name(std::string_view dtype_name, bool is_cuda) {
  std::string name = is_cuda ? "torch.cuda." : "torch.";
  for (const auto& entry : kTensorNames) {
    if (entry.dtype == dtype_name) {
      name += entry.tensor;
      return name;
    }
  }
  name += "Tensor";
  return name;
}

void format_event(std::string& out, const std::byte* event, const FormatContext& ctx) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  TC_ASSERT(h.size >= sizeof h && h.size % 8 == 0, "an event is its header and an 8-byte aligned payload");
  if (h.kind == EventKind::kVarState) {
    PayloadReader in(event + sizeof h, event + h.size);
    format_var_event(out, h, in, ctx);
    return;
  }
  out += "{\"func_call_id\":\"";
  out += ctx.call_uuid;
  out += '_';
  append_json_uint(out, h.call_ns);
  out += "\",\"thread_id\":";
  append_json_uint(out, ctx.thread_id);
  out += ",\"process_id\":";
  append_json_uint(out, ctx.process_id);
  append_meta_vars(out, h, ctx);
  out += ",\"type\":\"";
  out += type_string(h.kind);
  out += "\",\"function\":";
  append_json_string(out, ctx.names.get(h.api_id));
  out += ",\"is_bound_method\":";
  append_json_bool(out, h.flags & kBoundMethod);
  out += ",\"obj_id\":";
  if (h.flags & kHasObjId) {
    append_json_uint(out, h.obj_id);
  } else {
    out += "null";
  }
  if (h.flags & kUnderCompiler) out += ",\"compiled\":true";
  PayloadReader in(event + sizeof h, event + h.size);
  while (!in.at_end()) {
    const auto section = static_cast<SectionTag>(in.u8());
    if (section == SectionTag::kArgs) {
      format_args(out, in, ctx);
    } else if (section == SectionTag::kReturn) {
      format_return(out, in, ctx);
    } else if (section == SectionTag::kStack) {
      const uint32_t n = in.read<uint32_t>();
      out += ",\"stack_trace\":[";
      for (uint32_t i = 0; i < n; ++i) {
        if (i) out += ',';
        append_json_string(out, in.bytes());
      }
      out += ']';
    } else if (section == SectionTag::kException) {
      out += ",\"exception\":";
      append_json_string(out, in.bytes());
      out += ",\"exception_msg\":";
      append_json_string(out, in.bytes());
    } else {
      break;  // padding
    }
  }
  out += ",\"time\":";
  append_json_uint(out, h.time_ns);
  out += "}\n";
}

}  // namespace traincheck
