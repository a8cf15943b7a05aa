#include "trace/json_parse.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "common/short_text_hash.h"

namespace traincheck {

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING, "kJsonPadding must cover simdjson's padding");

namespace {

constexpr std::string_view kNanToken = "\x01tc-NaN";
constexpr std::string_view kPosInfToken = "\x01tc-Inf";
constexpr std::string_view kNegInfToken = "\x01tc--Inf";

// Rewrites NaN / Infinity / -Infinity literals outside strings into sentinel strings.
bool rewrite_non_finite(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size() + 32);
  bool in_string = false, changed = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < in.size()) out.push_back(in[++i]);
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    auto rest = in.substr(i);
    auto emit = [&](std::string_view token, size_t consumed) {
      out += "\"\\u0001tc-";
      out += token.substr(4);
      out += '"';
      i += consumed - 1;
      changed = true;
    };
    if (rest.starts_with("NaN")) emit(kNanToken, 3);
    else if (rest.starts_with("Infinity")) emit(kPosInfToken, 8);
    else if (rest.starts_with("-Infinity")) emit(kNegInfToken, 9);
    else out.push_back(c);
  }
  return changed;
}

}  // namespace

struct JsonParser::Impl {
  simdjson::dom::parser parser;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return static_cast<size_t>(short_text_hash(s)); }
  };
  // A direct-mapped cache in front of a map: a trace repeats the same few hundred keys and strings, and
  // an array slot compared once costs far less than the map's bucket walk (a third of the reader's time
  // went to these lookups).
  template <typename V>
  struct RecentTexts {
    static constexpr size_t kSlots = 1024;
    struct Slot {
      std::string text;
      V value{};
      bool used = false;
    };
    std::vector<Slot> slots = std::vector<Slot>(kSlots);
    Slot& slot(uint64_t hash) { return slots[hash & (kSlots - 1)]; }
    const V* find(std::string_view text, uint64_t hash) {
      Slot& s = slot(hash);
      return s.used && s.text == text ? &s.value : nullptr;
    }
    const V* find(std::string_view text) { return find(text, short_text_hash(text)); }
    void put(std::string_view text, uint64_t hash, const V& value) {
      Slot& s = slot(hash);
      s.text.assign(text);
      s.value = value;
      s.used = true;
    }
    void put(std::string_view text, const V& value) { put(text, short_text_hash(text), value); }
  };
  // Every string value seen (up to kMaxStrings, then forgotten all at once), one shared payload each,
  // found by hash: open addressing over (hash, value), the text read from the payload. A model's tens
  // of thousands of parameter names miss the recent cache in turn; a node-based map cost a bucket walk
  // and a node per name on each of them.
  struct StringTable {
    static constexpr size_t kMaxStrings = 200000;
    struct Slot {
      uint64_t hash = 0;
      Value value;  // not a string: the slot is free
    };
    std::vector<Slot> slots;  // size 0 or a power of two, at most half full
    size_t used = 0;
    const Value* find(std::string_view text, uint64_t hash) const {
      if (slots.empty()) return nullptr;
      const size_t wrap = slots.size() - 1;
      for (size_t i = hash & wrap;; i = (i + 1) & wrap) {
        const Slot& s = slots[i];
        if (!s.value.is_string()) return nullptr;
        if (s.hash == hash && s.value.as_string() == text) return &s.value;
      }
    }
    const Value& insert(std::string_view text, uint64_t hash) {
      if (used >= kMaxStrings) {  // bound memory on traces with many unique strings
        slots.clear();
        used = 0;
      }
      if (2 * (used + 1) > slots.size()) grow(std::max<size_t>(1024, 2 * slots.size()));
      const size_t wrap = slots.size() - 1;
      for (size_t i = hash & wrap;; i = (i + 1) & wrap)
        if (!slots[i].value.is_string()) {
          slots[i] = Slot{hash, Value::string(std::string(text))};
          ++used;
          return slots[i].value;
        }
    }
    void grow(size_t size) {
      std::vector<Slot> old(size);
      old.swap(slots);
      const size_t wrap = slots.size() - 1;
      for (Slot& s : old)
        if (s.value.is_string())
          for (size_t i = s.hash & wrap;; i = (i + 1) & wrap)
            if (!slots[i].value.is_string()) {
              slots[i] = std::move(s);
              break;
            }
    }
  };
  RecentTexts<KeyId> recent_keys;
  RecentTexts<Value> recent_strings, recent_composites;

  const WellKnownKeys& known_keys = keys();
  std::unordered_map<std::string, KeyId, StringHash, std::equal_to<>> raw_keys;
  std::unordered_map<uint64_t, KeyId> flat_keys;         // (prefix id, raw id) -> flattened id
  StringTable strings;
  std::string rewritten;
  bool sentinels = false;  // the current line had non-finite literals rewritten

  KeyId raw_key(std::string_view k) {
    if (const KeyId* recent = recent_keys.find(k)) return *recent;
    KeyId id;
    if (auto it = raw_keys.find(k); it != raw_keys.end()) {
      id = it->second;
    } else {
      id = intern_key(k);
      raw_keys.emplace(std::string(k), id);
    }
    recent_keys.put(k, id);
    return id;
  }

  KeyId flat_key(KeyId prefix, KeyId raw) {
    const uint64_t packed = (uint64_t{prefix} << 32) | raw;
    auto it = flat_keys.find(packed);
    if (it != flat_keys.end()) return it->second;
    std::string text(key_name(prefix));
    text += '.';
    text += key_name(raw);
    KeyId id = intern_key(text);
    flat_keys.emplace(packed, id);
    return id;
  }

  // A call id is unique to one call, whose pre and post records carry it: the post shares the pre's
  // string. Ids are forgotten once paired (or all at once past a bound, for calls that never return).
  std::unordered_map<std::string_view, Value, StringHash> open_calls;  // keys view their value's text
  Value call_id(std::string_view s) {
    if (sentinels) return make_string(s, false);
    auto it = open_calls.find(s);
    if (it != open_calls.end()) {
      Value v = std::move(it->second);
      open_calls.erase(it);
      return v;
    }
    if (open_calls.size() > 100000) open_calls.clear();
    Value v = Value::string(std::string(s));
    open_calls.emplace(std::string_view(v.as_string()), v);
    return v;
  }

  Value make_string(std::string_view s, bool cache) {
    if (sentinels && !s.empty() && s[0] == '\x01') {
      if (s == kNanToken) return Value::real(std::numeric_limits<double>::quiet_NaN());
      if (s == kPosInfToken) return Value::real(std::numeric_limits<double>::infinity());
      if (s == kNegInfToken) return Value::real(-std::numeric_limits<double>::infinity());
    }
    if (!cache || s.size() > 96) return Value::string(std::string(s));
    const uint64_t hash = short_text_hash(s);
    if (const Value* recent = recent_strings.find(s, hash)) return *recent;
    const Value* known = strings.find(s, hash);
    const Value& value = known ? *known : strings.insert(s, hash);
    recent_strings.put(s, hash, value);
    return value;
  }

  // Small arrays and objects repeat across records ({"0": {"torch.optim.adam.Adam": {}}}, [16, 16],
  // {"NoneType": null}): they are shared, found by an exact structural key (kinds, int vs float, string
  // bytes), so that 2 and 2.0 stay apart. Only values whose key stays under kMaxCompositeKey are cached.
  static constexpr size_t kMaxCompositeKey = 160;
  std::unordered_map<std::string, Value, StringHash, std::equal_to<>> composites;
  std::string composite_key;  // the key of the value being converted; empty when not cacheable

  static bool append_key(simdjson::dom::element e, std::string& key, int depth) {
    using simdjson::dom::element_type;
    if (key.size() > kMaxCompositeKey || depth > 8) return false;
    auto put = [&](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
    const element_type type = e.type();
    key.push_back(static_cast<char>(type));
    switch (type) {
      case element_type::NULL_VALUE: return true;
      case element_type::BOOL: key.push_back(e.get_bool().value_unsafe() ? '1' : '0'); return true;
      case element_type::INT64: { const int64_t v = e.get_int64().value_unsafe(); put(&v, 8); return true; }
      case element_type::UINT64: { const uint64_t v = e.get_uint64().value_unsafe(); put(&v, 8); return true; }
      case element_type::DOUBLE: { const double v = e.get_double().value_unsafe(); put(&v, 8); return true; }
      case element_type::STRING: {
        const std::string_view v = e.get_string().value_unsafe();
        const uint32_t n = static_cast<uint32_t>(v.size());
        put(&n, 4);
        key.append(v);
        return key.size() <= kMaxCompositeKey;
      }
      case element_type::ARRAY: {
        uint32_t n = 0;
        const simdjson::dom::array arr = e.get_array().value_unsafe();  // a copy: the result object is a temporary
        for (simdjson::dom::element child : arr) {
          if (!append_key(child, key, depth + 1)) return false;
          ++n;
        }
        put(&n, 4);  // closes the list: [[1],2] and [[1,2]] differ
        return true;
      }
      case element_type::OBJECT: {
        uint32_t n = 0;
        const simdjson::dom::object obj = e.get_object().value_unsafe();
        for (auto field : obj) {
          const uint32_t len = static_cast<uint32_t>(field.key.size());
          put(&len, 4);
          key.append(field.key);
          if (!append_key(field.value, key, depth + 1)) return false;
          ++n;
        }
        put(&n, 4);
        return true;
      }
    }
    return false;
  }

  // The shared value equal to `e` (an array or object), converted once. Values too large to have a key
  // are converted every time.
  template <typename Build>
  Value convert_composite(simdjson::dom::element e, Build&& build) {
    // A value holding a NaN (a line with sentinels) is never shared: a NaN equals nothing, but one
    // payload compares equal to itself.
    if (sentinels) return build();
    composite_key.clear();
    if (!append_key(e, composite_key, 0)) return build();
    if (const Value* recent = recent_composites.find(composite_key)) return *recent;
    auto it = composites.find(std::string_view(composite_key));
    if (it == composites.end()) {
      std::string key = composite_key;  // converting the children reuses composite_key
      Value v = build();
      if (composites.size() > 100000) composites.clear();  // bound memory on traces of ever-new values
      it = composites.emplace(std::move(key), std::move(v)).first;
    }
    recent_composites.put(it->first, it->second);
    return it->second;
  }

  Value convert(simdjson::dom::element e) {
    using simdjson::dom::element_type;
    switch (e.type()) {
      case element_type::NULL_VALUE: return Value::null();
      case element_type::BOOL: return Value::boolean(bool(e.get_bool().value_unsafe()));
      case element_type::INT64: return Value::integer(e.get_int64().value_unsafe());
      case element_type::UINT64:
        // Beyond int64: keep the magnitude as a float (pandas would do the same).
        return Value::real(static_cast<double>(e.get_uint64().value_unsafe()));
      case element_type::DOUBLE: return Value::real(e.get_double().value_unsafe());
      case element_type::STRING: return make_string(e.get_string().value_unsafe(), true);
      case element_type::ARRAY: return convert_composite(e, [&] {
        Array items;
        simdjson::dom::array arr = e.get_array().value_unsafe();  // a copy: the result object is a temporary
        items.reserve(arr.size());
        for (simdjson::dom::element child : arr) items.push_back(convert(child));
        return Value::array(std::move(items));
      });
      case element_type::OBJECT: return convert_composite(e, [&] {
        Object members;
        simdjson::dom::object obj = e.get_object().value_unsafe();
        members.reserve(obj.size());
        for (auto field : obj)
          members.push_back({raw_key(field.key), convert(field.value)});
        return Value::object(std::move(members));
      });
    }
    return Value::null();
  }

  // The keys of the previous record in visiting order: a file's records mostly repeat one shape, so a
  // field's key is usually the one at its position last time, found by one comparison.
  struct SeenKey {
    std::string text;
    KeyId prefix, raw, flat;
  };
  std::vector<SeenKey> seen_keys;
  size_t key_position = 0;  // in the record being flattened

  void flatten_record(simdjson::dom::object obj, std::vector<Field>& out) {
    key_position = 0;
    flatten(obj, kNoKey, out);
  }

  void flatten(simdjson::dom::object obj, KeyId prefix, std::vector<Field>& out) {
    const WellKnownKeys& k = known_keys;
    for (auto field : obj) {
      KeyId raw, key;
      const size_t at = key_position++;
      if (at < seen_keys.size() && seen_keys[at].prefix == prefix && seen_keys[at].text == field.key) {
        raw = seen_keys[at].raw;
        key = seen_keys[at].flat;
      } else {
        raw = raw_key(field.key);
        key = prefix == kNoKey ? raw : flat_key(prefix, raw);
        if (at >= seen_keys.size()) seen_keys.resize(at + 1);
        seen_keys[at] = SeenKey{std::string(field.key), prefix, raw, key};
      }
      simdjson::dom::object child;
      const bool nested_kept = prefix == kNoKey && (raw == k.args || raw == k.kwargs || raw == k.return_values);
      if (!nested_kept && field.value.get_object().get(child) == simdjson::SUCCESS && child.size() > 0) {
        flatten(child, key, out);
      } else if (prefix == kNoKey && raw == k.func_call_id && field.value.is_string()) {
        out.push_back({key, call_id(field.value.get_string().value_unsafe())});
      } else {
        out.push_back({key, convert(field.value)});
      }
    }
  }
};

JsonParser::JsonParser() : impl_(std::make_unique<Impl>()) {}
JsonParser::~JsonParser() = default;

Value JsonParser::string_value(std::string_view s) {
  impl_->sentinels = false;  // the text is the string itself, never a JSON token for NaN
  return impl_->make_string(s, true);
}

bool JsonParser::parse(std::string_view text, Value& out, std::string& error) {
  impl_->sentinels = false;
  simdjson::dom::element root;
  auto err = impl_->parser.parse(text.data(), text.size(), true).get(root);
  if (err) {
    if (!rewrite_non_finite(text, impl_->rewritten)) {
      error = simdjson::error_message(err);
      return false;
    }
    auto err2 = impl_->parser.parse(impl_->rewritten.data(), impl_->rewritten.size(), true).get(root);
    if (err2) {
      error = simdjson::error_message(err);
      return false;
    }
    impl_->sentinels = true;
  }
  out = impl_->convert(root);
  return true;
}

bool JsonParser::parse_record_padded(const char* data, size_t len, std::vector<Field>& fields,
                                     std::string& error) {
  fields.clear();
  impl_->sentinels = false;
  simdjson::dom::element root;
  auto err = impl_->parser.parse(data, len, false).get(root);
  if (err) {
    if (!rewrite_non_finite(std::string_view(data, len), impl_->rewritten)) {
      error = simdjson::error_message(err);
      return false;
    }
    if (impl_->parser.parse(impl_->rewritten.data(), impl_->rewritten.size(), true).get(root)) {
      error = simdjson::error_message(err);
      return false;
    }
    impl_->sentinels = true;
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    error = "a trace line must be a JSON object";
    return false;
  }
  impl_->flatten_record(obj, fields);
  // Stable insertion sort: a record has a dozen or two fields, mostly in order already, and
  // std::stable_sort would allocate a buffer per record.
  for (size_t i = 1; i < fields.size(); ++i) {
    if (!(fields[i].key < fields[i - 1].key)) continue;
    Field moving = std::move(fields[i]);
    size_t j = i;
    for (; j > 0 && moving.key < fields[j - 1].key; --j) fields[j] = std::move(fields[j - 1]);
    fields[j] = std::move(moving);
  }
  return true;
}

bool parse_json(std::string_view text, Value& out, std::string& error) {
  thread_local JsonParser parser;
  return parser.parse(text, out, error);
}

TextPosition text_position(std::string_view text, size_t offset) {
  TextPosition p;
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

namespace {

// Visits every value (objects and arrays recursively, scalars read), stopping at the first error.
simdjson::error_code walk_value(simdjson::ondemand::value v, int depth) {
  if (depth > 512) return simdjson::DEPTH_ERROR;
  simdjson::ondemand::json_type type;
  if (auto err = v.type().get(type)) return err;
  switch (type) {
    case simdjson::ondemand::json_type::object: {
      simdjson::ondemand::object obj;
      if (auto err = v.get_object().get(obj)) return err;
      for (auto field : obj) {
        simdjson::ondemand::field f;
        if (auto err = std::move(field).get(f)) return err;
        if (auto err = walk_value(f.value(), depth + 1)) return err;
      }
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::array: {
      simdjson::ondemand::array arr;
      if (auto err = v.get_array().get(arr)) return err;
      for (auto element : arr) {
        simdjson::ondemand::value child;
        if (auto err = std::move(element).get(child)) return err;
        if (auto err = walk_value(child, depth + 1)) return err;
      }
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::number: return v.get_double().error();
    case simdjson::ondemand::json_type::string: return v.get_string().error();
    case simdjson::ondemand::json_type::boolean: return v.get_bool().error();
    case simdjson::ondemand::json_type::null: return v.is_null().error();
  }
  return simdjson::SUCCESS;
}

}  // namespace

size_t json_error_offset(std::string_view text) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return std::string_view::npos;
  auto offset_now = [&]() -> size_t {
    const char* at = nullptr;
    if (doc.current_location().get(at) || at == nullptr) return text.size();  // past the end: the text ended early
    return static_cast<size_t>(at - padded.data());
  };
  bool scalar = false;
  if (doc.is_scalar().get(scalar)) return offset_now();
  if (scalar) return std::string_view::npos;  // a malformed scalar document: nothing to point into
  simdjson::ondemand::value root;
  if (doc.get_value().get(root)) return offset_now();
  if (walk_value(root, 0)) return offset_now();
  const char* rest = nullptr;
  if (!doc.current_location().get(rest) && rest != nullptr) return static_cast<size_t>(rest - padded.data());  // trailing text
  return std::string_view::npos;
}

std::vector<size_t> json_member_offsets(std::string_view text) {
  std::vector<size_t> out;
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(obj)) return {};
  for (auto field : obj) {
    simdjson::ondemand::field f;
    if (std::move(field).get(f)) return {};
    // raw() points just after the key's opening quote.
    out.push_back(static_cast<size_t>(f.key().raw() - padded.data()) - 1);
  }
  return out;
}

bool open_plain_file(const std::string& path, std::ifstream& in, std::string& error) {
  // Only plain files: a folder reads as a huge size (bad_alloc), a FIFO blocks forever, a device never ends.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    error = std::filesystem::is_directory(status) ? "is a folder, not a file" : "not a plain file (a FIFO, socket or device)";
    return false;
  }
  in.open(path, std::ios::binary);
  if (!in) {
    error = "cannot open file";
    return false;
  }
  return true;
}

bool read_file(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in;
  if (!open_plain_file(path, in, error)) return false;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  out.resize(static_cast<size_t>(size));
  if (size > 0 && !in.read(out.data(), size)) {
    error = "cannot read file";
    return false;
  }
  return true;
}

bool valid_utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace traincheck
