#include "relations/api_contain_var_values.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>

namespace traincheck {

namespace {

const Value& pre_of(const TraceStore& trace, const VarChange& c) { return trace.attr(c).states[c.new_state - 1].value; }
const Value& post_of(const TraceStore& trace, const VarChange& c) { return trace.attr(c).states[c.new_state].value; }

void append_key(std::string& out, const Value& pre, const Value& post) {
  append_value_json(out, pre);
  out += '\x1f';  // no JSON text holds it, so the two halves never run together
  append_value_json(out, post);
}

// Whether two values have the same JSON text, without writing it where the kinds make it plain.
bool same_json(const Value& a, const Value& b) {
  if (a.kind() == b.kind()) {
    switch (a.kind()) {
      case ValueKind::Null: return true;
      case ValueKind::Bool: return a.as_bool() == b.as_bool();
      case ValueKind::Int: return a.as_int() == b.as_int();
      case ValueKind::String: return a.as_string() == b.as_string();
      default: break;  // doubles (NaN is null), arrays and objects (member order): by their text
    }
  }
  return to_json(a) == to_json(b);
}

}  // namespace

void VarValueChanges::add(const TraceStore& trace, const VarChange& change, uint32_t pos) {
  thread_local std::string key;
  key.clear();
  append_key(key, pre_of(trace, change), post_of(trace, change));
  changes_.push_back(Change{std::hash<std::string_view>{}(key), change, pos});
}

std::vector<VarValueChanges::Distinct> VarValueChanges::distinct(const TraceStore& trace) {
  // Equal keys, equal hashes: group within runs of one hash (changes stay in call order inside a run).
  std::stable_sort(changes_.begin(), changes_.end(), [](const Change& a, const Change& b) { return a.key_hash < b.key_hash; });
  std::vector<uint32_t> id_of(changes_.size());  // distinct pair of each change
  std::vector<uint32_t> first_change;            // per distinct pair: its first change
  for (size_t lo = 0; lo < changes_.size();) {
    size_t hi = lo;
    while (hi < changes_.size() && changes_[hi].key_hash == changes_[lo].key_hash) ++hi;
    const uint32_t run_first_id = static_cast<uint32_t>(first_change.size());
    for (size_t i = lo; i < hi; ++i) {
      const VarChange& c = changes_[i].change;
      uint32_t id = run_first_id;
      for (; id < first_change.size(); ++id) {
        const VarChange& rep = changes_[first_change[id]].change;
        if (same_json(pre_of(trace, c), pre_of(trace, rep)) && same_json(post_of(trace, c), post_of(trace, rep))) break;
      }
      if (id == first_change.size()) first_change.push_back(static_cast<uint32_t>(i));
      id_of[i] = id;
    }
    lo = hi;
  }
  // Each pair's positions, in call order, once each (a call may change several instances alike).
  const size_t n = first_change.size();
  std::vector<uint32_t> start(n + 1, 0);
  for (uint32_t id : id_of) ++start[id + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  positions_.assign(changes_.size(), 0);
  std::vector<uint32_t> fill(start.begin(), start.end() - 1), count(n, 0);
  for (size_t i = 0; i < changes_.size(); ++i) {
    const uint32_t id = id_of[i];
    const uint32_t pos = changes_[i].pos;
    if (count[id] > 0 && positions_[fill[id] - 1] == pos) continue;
    positions_[fill[id]++] = pos;
    ++count[id];
  }
  // The keys' order, from their texts written once into one buffer.
  std::string keys;
  std::vector<size_t> key_start(n + 1, 0);
  for (size_t id = 0; id < n; ++id) {
    const VarChange& rep = changes_[first_change[id]].change;
    append_key(keys, pre_of(trace, rep), post_of(trace, rep));
    key_start[id + 1] = keys.size();
  }
  auto key = [&](uint32_t id) { return std::string_view(keys).substr(key_start[id], key_start[id + 1] - key_start[id]); };
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  std::vector<Distinct> out;
  out.reserve(n);
  for (uint32_t id : order) {
    const VarChange& rep = changes_[first_change[id]].change;
    out.push_back(Distinct{&pre_of(trace, rep), &post_of(trace, rep), {positions_.data() + start[id], count[id]}});
  }
  std::vector<Change>().swap(changes_);
  return out;
}

}  // namespace traincheck
