// A JSON value as the analyzer sees it: small (24 bytes), immutable once built, cheap to copy.
//
// Scalars live inline; strings, arrays and objects are shared, immutable heap nodes, so copying a Value
// (into an example, an invariant, a result) never copies the payload. Object keys are interned KeyIds.
//
// Semantics follow the original tool's pandas view of a trace (compat §5.4):
//   - JSON null is the value None (MD_NONE): it equals other nulls and is hashable.
//   - A field that is absent is not a Value at all (callers get nullptr), which is pandas' NaN.
//   - A float NaN read from a stdlib-json file is a Double that is NaN; it equals nothing.
//   - Numbers compare by value across int and float: 2 == 2.0, and both hash alike.
#pragma once

#include <cstdint>
#include <memory>
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
  Value() : kind_(ValueKind::Null), i_(0) {}
  static Value null() { return Value(); }
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value real(double d);
  static Value string(std::string s);
  static Value string(std::shared_ptr<const std::string> s);
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

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == ValueKind::Double ? static_cast<int64_t>(d_) : i_; }
  double as_double() const { return kind_ == ValueKind::Int ? static_cast<double>(i_) : d_; }
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  std::shared_ptr<const std::string> shared_string() const;

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
  ValueKind kind_;
  union {
    bool b_;
    int64_t i_;
    double d_;
  };
  std::shared_ptr<const void> ptr_;
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
