#include "check/online/var_line_templates.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>

#include "common/short_text_hash.h"
#include "record/step_claims.h"
#include "trace/key_table.h"

namespace traincheck {

namespace {

// The fields of a state record that change while its variable's line otherwise stays the same
// (docs/formats.md §Variable state records): where each sits in the line (its object's key in the
// record, "" for the record itself), and whether it must be an integer (a record without a numeric
// time is a bad line: the parser's to report). The step claims' attributes (record/step_claims.h) follow
// the fixed fields, one per declared claim.
struct VaryingField {
  std::string_view parent;
  std::string_view key;
  bool integer_only;
};
constexpr VaryingField kFixedFields[] = {
    {"", "time", true},
    {"meta_vars", "step", false},
    {"attributes", "data", false},
    {"attributes", "grad", false},
    {"attributes", "_TRAINCHECK_data_ID", false},
    {"attributes", "_TRAINCHECK_grad_ID", false},
};
constexpr size_t kFieldCount = std::size(kFixedFields) + kStepClaimCount;
static_assert(kFieldCount <= 256, "a template's field index is a uint8_t");
constexpr std::array<VaryingField, kFieldCount> kVaryingFields = [] {
  std::array<VaryingField, kFieldCount> fields{};
  size_t i = 0;
  for (const VaryingField& field : kFixedFields) fields[i++] = field;
  for (const StepClaim& claim : kStepClaims) fields[i++] = {"attributes", claim.attribute, false};
  return fields;
}();
constexpr size_t kTimeField = 0, kStepField = 1;

const std::array<KeyId, kFieldCount>& varying_keys() {
  static const std::array<KeyId, kFieldCount> keys = [] {
    std::array<KeyId, kFieldCount> k{};
    for (size_t i = 0; i < kFieldCount; ++i) {
      const VaryingField& f = kVaryingFields[i];
      k[i] = intern_key(f.parent.empty() ? std::string(f.key) : std::string(f.parent) + "." + std::string(f.key));
    }
    return k;
  }();
  return keys;
}

// Reads the JSON literal at the start of `text` as the trace parser reads it: an integer within int64
// (no fraction, no exponent, no "-0", which the parser may read as a float), true, false or null.
// False for anything else, which only the parser reads.
bool read_literal(std::string_view text, bool integer_only, Value& value, size_t& length) {
  auto word = [&](std::string_view w, Value v) {
    if (integer_only || !text.starts_with(w)) return false;
    value = v;
    length = w.size();
    return true;
  };
  if (text.empty()) return false;
  if (text[0] == 't') return word("true", Value::boolean(true));
  if (text[0] == 'f') return word("false", Value::boolean(false));
  if (text[0] == 'n') return word("null", Value::null());
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  const size_t first = i;
  uint64_t magnitude = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  const size_t digits = i - first;
  if (digits == 0 || (digits > 1 && text[first] == '0')) return false;
  if (i < text.size() && (text[i] == '.' || text[i] == 'e' || text[i] == 'E')) return false;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit || (negative && magnitude == 0)) return false;
  value = Value::integer(negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude));
  length = i;
  return true;
}

// The spans of the varying fields' values in a line the parser accepted (its non-finite literals too):
// a walk over the JSON that skips strings whole and matches a key only at its place in the record.
class SpanFinder {
 public:
  explicit SpanFinder(std::string_view line) : s_(line) {}
  // A key met twice at its place gives two spans (the record then holds its field twice: learn()
  // refuses it).
  void find(std::vector<std::pair<size_t, size_t>>& spans, std::vector<uint8_t>& fields) {
    spans_ = &spans;
    fields_ = &fields;
    skip_ws();
    value(0, {});
  }

 private:
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  std::string_view string_token() {  // at '"': the raw text between the quotes
    const size_t begin = ++i_;
    while (i_ < s_.size() && s_[i_] != '"') i_ += s_[i_] == '\\' ? 2 : 1;
    const std::string_view raw = s_.substr(begin, std::min(i_, s_.size()) - begin);
    ++i_;
    return raw;
  }
  // A value whose key is `key` in an object that is the value of `parent` in the record (depth 1: a
  // member of the record, parent "").
  void value(int depth, std::string_view parent, std::string_view key = {}) {
    if (i_ >= s_.size()) return;
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      for (;;) {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] == close) break;
        if (c == '{') {
          const std::string_view member = s_[i_] == '"' ? string_token() : std::string_view();
          skip_ws();
          if (i_ < s_.size() && s_[i_] == ':') ++i_;
          skip_ws();
          value(depth + 1, depth == 0 ? std::string_view() : key, member);
        } else {
          value(depth + 1, {}, {});
        }
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ',') ++i_;
        else break;
      }
      if (i_ < s_.size()) ++i_;
      return;
    }
    if (c == '"') {
      string_token();
      return;
    }
    const size_t begin = i_;
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' && s_[i_] != '\t' &&
           s_[i_] != '\r' && s_[i_] != '\n')
      ++i_;
    const int wanted_depth = parent.empty() ? 1 : 2;
    if (depth != wanted_depth) return;
    for (size_t f = 0; f < kFieldCount; ++f)
      if (kVaryingFields[f].parent == parent && kVaryingFields[f].key == key) {
        spans_->emplace_back(begin, i_);
        fields_->push_back(static_cast<uint8_t>(f));
      }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::vector<std::pair<size_t, size_t>>* spans_ = nullptr;
  std::vector<uint8_t>* fields_ = nullptr;
};

// The variable's name as the line's first member gives it ({"var_name": "<name>", as the collectors
// write state lines); empty when the line does not start so or the name has escapes.
std::string_view leading_var_name(std::string_view line) {
  constexpr std::string_view kHead = "{\"var_name\":";
  if (!line.starts_with(kHead)) return {};
  size_t i = kHead.size();
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] != '"') return {};
  const size_t begin = i + 1;
  const size_t end = line.find_first_of("\"\\", begin);
  if (end == std::string_view::npos || line[end] != '"') return {};
  return line.substr(begin, end - begin);
}

size_t template_bytes(const std::string& text, size_t fields, size_t spans) {
  return sizeof(std::string) + text.capacity() + fields * sizeof(Field) + spans * 16 + 160;
}

}  // namespace

size_t VarLineTemplates::KeyHash::operator()(const Key& k) const noexcept {
  return static_cast<size_t>(short_text_hash(k.name) ^ (static_cast<uint64_t>(k.source) * 0x9E3779B97F4A7C15ULL));
}

bool VarLineTemplates::match(const Template& t, std::string_view line, Record& out) {
  std::array<Value, kFieldCount> values;
  size_t at = 0, from = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const size_t n = s.begin - from;
    if (line.size() - at < n || std::memcmp(line.data() + at, t.text.data() + from, n) != 0) return false;
    at += n;
    size_t length = 0;
    if (!read_literal(line.substr(at), kVaryingFields[s.field].integer_only, values[i], length)) return false;
    at += length;
    from = s.end;
  }
  const size_t tail = t.text.size() - from;
  if (line.size() - at != tail || std::memcmp(line.data() + at, t.text.data() + from, tail) != 0) return false;
  out = t.base;
  out.fields.reserve(t.spans.size());
  const auto& keys = varying_keys();
  for (uint8_t i : t.by_key) {
    const uint8_t f = t.spans[i].field;
    const Value& v = values[i];
    // The cached members the varying fields give (Record::refresh_cached).
    if (f == kTimeField) out.time = v.as_int();
    if (f == kStepField) {
      out.has_step = v.is_number();
      out.step = out.has_step ? v.as_int() : 0;
    }
    out.fields.push_back(Field{keys[f], v});
  }
  return true;
}

void VarLineTemplates::followed(uint32_t source, uint32_t index) {
  if (source >= last_.size()) last_.resize(source + 1);
  if (valid(last_[source])) slab_[last_[source].index].next = link_of(index);
  last_[source] = link_of(index);
}

bool VarLineTemplates::build(uint32_t source, std::string_view line, Record& out) {
  if (templates() == 0) return false;  // a process whose checks want no state line: nothing to look up
  if (source < last_.size() && valid(last_[source])) {
    const Link predicted = slab_[last_[source].index].next;
    if (valid(predicted) && match(slab_[predicted.index], line, out)) {
      last_[source] = predicted;
      ++built_;
      return true;
    }
  }
  const std::string_view name = leading_var_name(line);
  if (name.empty()) return false;
  const auto it = variables_.find(Key{source, name});
  if (it == variables_.end()) return false;
  std::vector<uint32_t>& shapes = it->second;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!match(slab_[shapes[i]], line, out)) continue;
    const uint32_t index = shapes[i];
    std::rotate(shapes.begin(), shapes.begin() + static_cast<std::ptrdiff_t>(i), shapes.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    followed(source, index);
    ++built_;
    return true;
  }
  return false;
}

uint32_t VarLineTemplates::store(Template t) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
    t.generation = slab_[index].generation;
    slab_[index] = std::move(t);
  } else {
    index = static_cast<uint32_t>(slab_.size());
    slab_.push_back(std::move(t));
  }
  slab_[index].live = true;
  bytes_ += slab_[index].cost;
  return index;
}

void VarLineTemplates::evict(uint32_t index) {
  Template& t = slab_[index];
  bytes_ -= t.cost;
  const uint32_t generation = t.generation + 1;  // links to it go stale
  t = Template{};
  t.generation = generation;
  free_.push_back(index);
}

bool VarLineTemplates::learn(uint32_t source, std::string_view line, const Record& record) {
  if (record.type != RecordType::StateChange || !record.shared_fields.is_null()) return false;
  const std::string_view name = leading_var_name(line);
  if (name.empty() || record.var_name != name) return false;
  std::vector<std::pair<size_t, size_t>> found;
  std::vector<uint8_t> found_fields;
  SpanFinder(line).find(found, found_fields);
  // Each span's literal must read as the record's one field of its key holds it: then a later line's
  // literal reads as the parser would read it. A value this does not read (a float, a string) stays
  // with the static fields, compared byte for byte.
  const auto& keys = varying_keys();
  Template t;
  std::vector<bool> varying(record.fields.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    const uint8_t f = found_fields[i];
    Value literal;
    size_t length = 0;
    const std::string_view token = line.substr(found[i].first, found[i].second - found[i].first);
    if (!read_literal(token, kVaryingFields[f].integer_only, literal, length) || length != token.size()) continue;
    const auto [lo, hi] = std::equal_range(record.fields.begin(), record.fields.end(), Field{keys[f], Value()},
                                           [](const Field& a, const Field& b) { return a.key < b.key; });
    if (hi - lo != 1 || !(lo->value == literal)) return false;
    varying[static_cast<size_t>(lo - record.fields.begin())] = true;
    t.spans.push_back(Span{found[i].first, found[i].second, f});
  }
  Object shared;
  shared.reserve(record.fields.size() - t.spans.size());
  for (size_t i = 0; i < record.fields.size(); ++i)
    if (!varying[i]) shared.push_back(record.fields[i]);
  t.text.assign(line);
  t.cost = template_bytes(t.text, shared.size(), t.spans.size());
  Key key{source, name};
  auto it = variables_.find(key);
  const bool full = it != variables_.end() && it->second.size() >= kTemplatesPerVariable;
  const size_t freed = full ? slab_[it->second.back()].cost : 0;  // the least recently matched makes room
  if (bytes_ + t.cost > budget_bytes_ + freed) return false;
  t.by_key.resize(t.spans.size());
  for (size_t i = 0; i < t.by_key.size(); ++i) t.by_key[i] = static_cast<uint8_t>(i);
  std::sort(t.by_key.begin(), t.by_key.end(), [&](uint8_t a, uint8_t b) { return keys[t.spans[a].field] < keys[t.spans[b].field]; });
  t.base = record;
  t.base.fields = {};
  t.base.shared_fields = Value::object(std::move(shared));
  t.base.shared_fields_common = true;
  if (it == variables_.end()) {
    names_.push_back(std::make_unique<std::string>(name));
    key.name = *names_.back();
    it = variables_.emplace(key, std::vector<uint32_t>{}).first;
  }
  std::vector<uint32_t>& shapes = it->second;
  if (full) {
    evict(shapes.back());
    shapes.pop_back();
  }
  const uint32_t index = store(std::move(t));
  shapes.insert(shapes.begin(), index);
  followed(source, index);
  return true;
}

}  // namespace traincheck
