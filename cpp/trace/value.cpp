#include "trace/value.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/json_writer.h"

namespace traincheck {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = ValueKind::Bool;
  v.store_word<uint64_t>(b ? 1 : 0);
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = ValueKind::Int;
  v.store_word(i);
  return v;
}
Value Value::real(double d) {
  Value v;
  v.kind_ = ValueKind::Double;
  v.store_word(d);
  return v;
}
struct Value::StringNode : Node {
  explicit StringNode(std::string s) : text(std::move(s)) {}
  // Set once, racing writers store the same id (a text's id never changes); in Node's padding.
  mutable std::atomic<uint32_t> name_id{0};
  const std::string text;
};
struct Value::ArrayNode : Node {
  explicit ArrayNode(Array a) : items(std::move(a)) {}
  const Array items;
};
struct Value::ObjectNode : Node {
  explicit ObjectNode(Object o) : members(std::move(o)) {}
  const Object members;
};

void Value::release() {
  Node* const node_ = node();
  if (node_->refs.fetch_sub(1, std::memory_order_release) != 1) return;
  std::atomic_thread_fence(std::memory_order_acquire);
  switch (kind_) {
    case ValueKind::String: delete static_cast<StringNode*>(node_); break;
    case ValueKind::Array: delete static_cast<ArrayNode*>(node_); break;
    case ValueKind::Object: delete static_cast<ObjectNode*>(node_); break;
    default: break;
  }
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = ValueKind::String;
  v.store_word<Node*>(new StringNode(std::move(s)));
  return v;
}
Value Value::array(Array items) {
  Value v;
  v.kind_ = ValueKind::Array;
  v.store_word<Node*>(new ArrayNode(std::move(items)));
  return v;
}
Value Value::object(Object members) {
  Value v;
  v.kind_ = ValueKind::Object;
  v.store_word<Node*>(new ObjectNode(std::move(members)));
  return v;
}

const std::string& Value::as_string() const { return static_cast<const StringNode*>(node())->text; }
uint32_t Value::cached_name_id() const {
  return static_cast<const StringNode*>(node())->name_id.load(std::memory_order_relaxed);
}
void Value::cache_name_id(uint32_t id) const {
  static_cast<const StringNode*>(node())->name_id.store(id, std::memory_order_relaxed);
}
const Array& Value::as_array() const { return static_cast<const ArrayNode*>(node())->items; }
const Object& Value::as_object() const { return static_cast<const ObjectNode*>(node())->members; }

bool Value::is_nan() const { return kind_ == ValueKind::Double && std::isnan(real_bits()); }

const Value* Value::find(KeyId key) const {
  if (kind_ != ValueKind::Object) return nullptr;
  for (const Member& m : as_object())
    if (m.key == key) return &m.value;
  return nullptr;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != ValueKind::Object) return nullptr;
  auto id = find_key(key);
  return id ? find(*id) : nullptr;
}

bool Value::operator==(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == ValueKind::Int && o.kind_ == ValueKind::Int) return int_bits() == o.int_bits();
    // int vs float: compare exactly where the double is integral, so large int64 hashes are not
    // rounded into each other.
    if (kind_ == ValueKind::Int || o.kind_ == ValueKind::Int) {
      const int64_t i = kind_ == ValueKind::Int ? int_bits() : o.int_bits();
      const double d = kind_ == ValueKind::Int ? o.real_bits() : real_bits();
      if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18) || d != std::trunc(d)) return false;
      return static_cast<int64_t>(d) == i;
    }
    return real_bits() == o.real_bits();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case ValueKind::Null: return true;
    case ValueKind::Bool: return as_bool() == o.as_bool();
    case ValueKind::String: return same_payload(o) || as_string() == o.as_string();
    case ValueKind::Array: {
      if (same_payload(o)) return true;
      const Array& a = as_array();
      const Array& b = o.as_array();
      return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
    }
    case ValueKind::Object: {
      if (same_payload(o)) return true;
      const Object& a = as_object();
      const Object& b = o.as_object();
      if (a.size() != b.size()) return false;
      for (const Member& m : a) {
        const Value* other = o.find(m.key);
        if (other == nullptr || !(m.value == *other)) return false;
      }
      return true;
    }
    default: return false;
  }
}

size_t Value::hash() const {
  auto mix = [](size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); };
  switch (kind_) {
    case ValueKind::Null: return 0x6e756c6cULL;
    case ValueKind::Bool: return as_bool() ? 0x7472ULL : 0x6661ULL;
    case ValueKind::Int: return std::hash<int64_t>{}(int_bits());
    case ValueKind::Double: {
      // Integral doubles hash as the int they equal.
      const double d = real_bits();
      if (d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 && d == std::trunc(d))
        return std::hash<int64_t>{}(static_cast<int64_t>(d));
      return std::hash<double>{}(d);
    }
    case ValueKind::String: return std::hash<std::string_view>{}(as_string());
    case ValueKind::Array: {
      size_t h = 0x617272ULL;
      for (const Value& v : as_array()) h = mix(h, v.hash());
      return h;
    }
    case ValueKind::Object: {
      size_t h = 0x6f626aULL;  // order-independent: objects compare as maps
      for (const Member& m : as_object()) h += mix(std::hash<uint32_t>{}(m.key), m.value.hash());
      return h;
    }
  }
  return 0;
}

std::string_view Value::python_type_name() const {
  switch (kind_) {
    case ValueKind::Null: return "MD_NONE";
    case ValueKind::Bool: return "bool";
    case ValueKind::Int: return "int";
    case ValueKind::Double: return "float";
    case ValueKind::String: return "str";
    case ValueKind::Array: return "list";
    case ValueKind::Object: return "dict";
  }
  return "None";
}

static int kind_rank(ValueKind k) {
  switch (k) {
    case ValueKind::Null: return 0;
    case ValueKind::Bool: return 1;
    case ValueKind::Int:
    case ValueKind::Double: return 2;
    case ValueKind::String: return 3;
    case ValueKind::Array: return 4;
    case ValueKind::Object: return 5;
  }
  return 6;
}

bool value_less(const Value& a, const Value& b) {
  const int ra = kind_rank(a.kind()), rb = kind_rank(b.kind());
  if (ra != rb) return ra < rb;
  switch (a.kind()) {
    case ValueKind::Null: return false;
    case ValueKind::Bool: return a.as_bool() < b.as_bool();
    case ValueKind::Int:
    case ValueKind::Double:
      if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
      return a.as_double() < b.as_double();
    case ValueKind::String: return a.as_string() < b.as_string();
    default: return to_json(a) < to_json(b);
  }
}

static void newline_indent(std::string& out, int indent, int level) {
  out.push_back('\n');
  out.append(static_cast<size_t>(indent * level), ' ');
}

// What precedes element i of an array or object at `level`: a separator, and the element's own line
// when indented.
static void open_element(std::string& out, size_t i, JsonStyle style, int indent, int level) {
  if (i) out += style == JsonStyle::Spaced ? ", " : ",";
  if (style == JsonStyle::Indented) newline_indent(out, indent, level + 1);
}

// The closing bracket: on a line of its own when indented, unless the container is empty ("[]", "{}").
static void close_container(std::string& out, char bracket, bool empty, JsonStyle style, int indent, int level) {
  if (!empty && style == JsonStyle::Indented) newline_indent(out, indent, level);
  out.push_back(bracket);
}

void append_value_json(std::string& out, const Value& v, JsonStyle style, int indent, int level) {
  switch (v.kind()) {
    case ValueKind::Null: out += "null"; return;
    case ValueKind::Bool: append_json_bool(out, v.as_bool()); return;
    case ValueKind::Int: append_json_int(out, v.as_int()); return;
    case ValueKind::Double: append_json_double(out, v.as_double()); return;
    case ValueKind::String: append_json_string(out, v.as_string()); return;
    case ValueKind::Array: {
      const Array& a = v.as_array();
      out.push_back('[');
      for (size_t i = 0; i < a.size(); ++i) {
        open_element(out, i, style, indent, level);
        append_value_json(out, a[i], style, indent, level + 1);
      }
      close_container(out, ']', a.empty(), style, indent, level);
      return;
    }
    case ValueKind::Object: {
      const Object& o = v.as_object();
      out.push_back('{');
      for (size_t i = 0; i < o.size(); ++i) {
        open_element(out, i, style, indent, level);
        append_json_string(out, key_name(o[i].key));
        out += style == JsonStyle::Compact ? ":" : ": ";
        append_value_json(out, o[i].value, style, indent, level + 1);
      }
      close_container(out, '}', o.empty(), style, indent, level);
      return;
    }
  }
}

std::string to_json(const Value& v, JsonStyle style) {
  std::string out;
  append_value_json(out, v, style);
  return out;
}

std::string value_to_display(const Value& v) { return v.is_string() ? v.as_string() : to_json(v); }

Value make_object(std::initializer_list<std::pair<std::string_view, Value>> members) {
  Object o;
  o.reserve(members.size());
  for (const auto& [k, v] : members) o.push_back({intern_key(k), v});
  return Value::object(std::move(o));
}

Value make_string_array(const std::vector<std::string>& items) {
  Array a;
  a.reserve(items.size());
  for (const auto& s : items) a.push_back(Value::string(s));
  return Value::array(std::move(a));
}

}  // namespace traincheck
static_assert(sizeof(traincheck::Value) == 12 && alignof(traincheck::Value) == 4, "a Value is one tag and one 4-aligned word");
static_assert(sizeof(traincheck::Member) == 16, "an object member is a key and a Value, unpadded");
