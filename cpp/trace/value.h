// A JSON value as the analyzer sees it: small (12 bytes, 4-aligned), immutable once built, cheap to copy.
//
// Scalars live inline; strings, arrays and objects are shared, immutable heap nodes with an intrusive
// (atomic) reference count, so copying a Value (into an example, an invariant, a result) never copies
// the payload, and a trace of millions of records pays one pointer per field. Object keys are interned
// KeyIds.
//
// Semantics follow the original tool's pandas view of a trace (docs/formats.md §Reading traces):
//   - JSON null is the value None (MD_NONE): it equals other nulls and is hashable.
//   - A field that is absent is not a Value at all (callers get nullptr), which is pandas' NaN.
//   - A float NaN read from a stdlib-json file is a Double that is NaN; it equals nothing.
//   - Numbers compare by value across int and float: 2 == 2.0, and both hash alike.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "trace/key_table.h"

namespace traincheck {

enum class ValueKind : uint8_t { Null, Bool, Int, Double, String, Array, Object };

class Value;
struct Member;
using Array = std::vector<Value>;
using Object = std::vector<Member>;

class Value {
 public:
  // `d` as an int64: truncated toward zero, saturated to the range, NaN as 0.
  static int64_t saturated_int(double d) {
    if (!(d == d)) return 0;
    if (d >= 9223372036854775808.0) return INT64_MAX;
    if (d < -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  Value() : kind_(ValueKind::Null), word_{0, 0} {}
  Value(const Value& o) : kind_(o.kind_), word_{o.word_[0], o.word_[1]} {
    if (o.has_node()) node()->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Value(Value&& o) noexcept : kind_(o.kind_), word_{o.word_[0], o.word_[1]} {
    o.kind_ = ValueKind::Null;
    o.word_[0] = o.word_[1] = 0;
  }
  Value& operator=(const Value& o) {
    // The same payload (a record copied over one sharing its fields): no reference count touched.
    if (has_node() && o.has_node() && node() == o.node()) return *this;
    Value copy(o);
    swap(copy);
    return *this;
  }
  Value& operator=(Value&& o) noexcept {
    Value moved(std::move(o));
    swap(moved);
    return *this;
  }
  ~Value() {
    if (has_node()) release();
  }
  void swap(Value& o) noexcept {
    std::swap(kind_, o.kind_);
    std::swap(word_, o.word_);
  }

  static Value null() { return Value(); }
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value real(double d);
  static Value string(std::string s);
  static Value array(Array items);
  static Value object(Object members);

  ValueKind kind() const { return kind_; }
  bool is_null() const { return kind_ == ValueKind::Null; }
  bool is_bool() const { return kind_ == ValueKind::Bool; }
  bool is_int() const { return kind_ == ValueKind::Int; }
  bool is_double() const { return kind_ == ValueKind::Double; }
  bool is_number() const { return kind_ == ValueKind::Int || kind_ == ValueKind::Double; }
  bool is_string() const { return kind_ == ValueKind::String; }
  bool is_array() const { return kind_ == ValueKind::Array; }
  bool is_object() const { return kind_ == ValueKind::Object; }
  bool is_nan() const;
  // Scalars are hashable (usable in clauses); arrays and objects are not, as in Python.
  bool is_hashable() const { return kind_ != ValueKind::Array && kind_ != ValueKind::Object; }

  bool as_bool() const { return word_[0] != 0; }
  // A double is truncated toward zero and saturated to int64's range (NaN reads as 0): a trace field
  // such as thread_id may hold any JSON number, and an out-of-range cast is undefined behaviour.
  int64_t as_int() const { return kind_ == ValueKind::Double ? saturated_int(real_bits()) : int_bits(); }
  double as_double() const { return kind_ == ValueKind::Int ? static_cast<double>(int_bits()) : real_bits(); }
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  // True when both are strings, arrays or objects sharing one payload (copies of one Value).
  bool same_payload(const Value& o) const { return has_node() && o.has_node() && node() == o.node(); }
  // The shared payload's address (strings, arrays, objects), or null for a scalar: equal ids, equal values.
  const void* payload_id() const { return has_node() ? static_cast<const void*>(node()) : nullptr; }
  // How many Values share the payload (0 for a scalar): a snapshot, other threads may copy or drop theirs.
  uint32_t payload_references() const { return has_node() ? node()->refs.load(std::memory_order_relaxed) : 0; }
  // A string's id in the name table (trace/name.h), kept in its shared payload by Name::of so that the
  // records sharing the payload are named without hashing the text again: 0 until then (and for "").
  // Strings only.
  uint32_t cached_name_id() const;
  void cache_name_id(uint32_t id) const;

  // Object member lookup (linear: objects in traces have few keys). nullptr if absent or not an object.
  const Value* find(KeyId key) const;
  const Value* find(std::string_view key) const;

  // Value equality with the numeric and NaN rules above; objects compare as unordered maps.
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }
  size_t hash() const;

  // The Python type name the original would report for this value in `prop_dtype`:
  // "int", "float", "str", "bool", "MD_NONE", "list", "dict".
  std::string_view python_type_name() const;

 private:
  struct Node {
    std::atomic<uint32_t> refs{1};
  };
  struct StringNode;
  struct ArrayNode;
  struct ObjectNode;
  bool has_node() const { return kind_ >= ValueKind::String; }
  void release();  // drops one reference to the node, deleting it with the last one

  // The payload word (an int64, a double, a bool as 0/1, or a Node*) is kept as two 32-bit halves, so a
  // Value is 4-aligned and 12 bytes, and a record field or object member (a KeyId and a Value) is 16
  // instead of 24. It is read and written through memcpy, which compiles to one unaligned load/store.
  // A leak checker must scan unaligned words (LeakSanitizer: LSAN_OPTIONS=use_unaligned=1, as
  // scripts/run_sanitizers.sh sets), or it reports payloads reachable only through such words.
  template <class T>
  T load_word() const {
    static_assert(sizeof(T) <= sizeof word_);
    T t;
    std::memcpy(&t, word_, sizeof t);
    return t;
  }
  template <class T>
  void store_word(T t) {
    static_assert(sizeof(T) <= sizeof word_);
    word_[0] = word_[1] = 0;
    std::memcpy(word_, &t, sizeof t);
  }
  int64_t int_bits() const { return load_word<int64_t>(); }
  double real_bits() const { return load_word<double>(); }
  Node* node() const { return load_word<Node*>(); }

  ValueKind kind_;
  uint32_t word_[2];
};

struct Member {
  KeyId key;
  Value value;
};

// A total order for deterministic output (null < bool < number < string < array < object).
bool value_less(const Value& a, const Value& b);

struct ValueHash {
  size_t operator()(const Value& v) const { return v.hash(); }
};

// Writing. Compact is orjson's style; Spaced is Python's json.dumps default (", " and ": ");
// Indented is json.dumps(indent=N). Non-finite floats are written as null.
enum class JsonStyle { Compact, Spaced, Indented };
void append_value_json(std::string& out, const Value& v, JsonStyle style = JsonStyle::Compact,
                       int indent = 4, int level = 0);
std::string to_json(const Value& v, JsonStyle style = JsonStyle::Compact);

// Short human form for messages and the report: strings unquoted, everything else as compact JSON.
std::string value_to_display(const Value& v);

// Small builders used by codecs and tests.
Value make_object(std::initializer_list<std::pair<std::string_view, Value>> members);
Value make_string_array(const std::vector<std::string>& items);

}  // namespace traincheck
