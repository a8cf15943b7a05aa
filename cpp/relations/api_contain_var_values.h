// APIContain's var-change children of one parent API (api_contain.cpp): the changes of one
// (var type, attribute) inside the parent's calls, grouped by their (pre, post) values, one hypothesis
// per distinct pair unless they are generalised into one.
//
// A digest (data, grad) takes a new value at every change, so a parent such as Adam.step makes as many
// distinct pairs as it changes parameters. A node-based map of them keyed by their JSON text (with a
// position list and two value sets each) was a fifth of traincheck-infer's peak memory
// (bench/memory_bench). Changes are kept in one flat array instead (24 bytes each) and grouped once, by
// sorting, when the hypotheses are made; the pairs come out in the map's order all the same.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trace/trace_store.h"

namespace traincheck {

class VarValueChanges {
 public:
  // Notes `change` (of this group's type and attribute) made by the parent call at `pos`; positions
  // come in ascending order.
  void add(const TraceStore& trace, const VarChange& change, uint32_t pos);

  // One distinct (pre, post) pair: equal pairs are those with equal JSON texts (so 2 and 2.0 differ,
  // and a NaN is null), as the original keys them.
  struct Distinct {
    const Value* pre;
    const Value* post;
    std::span<const uint32_t> positions;  // the parent calls that made it: ascending, distinct
  };
  // The distinct pairs in the order of their keys, to_json(pre) + "\x1f" + to_json(post). Call once;
  // the spans live as long as this object.
  std::vector<Distinct> distinct(const TraceStore& trace);

 private:
  struct Change {
    uint64_t key_hash;
    VarChange change;
    uint32_t pos;
  };
  std::vector<Change> changes_;
  std::vector<uint32_t> positions_;  // Distinct::positions point here
};

}  // namespace traincheck
