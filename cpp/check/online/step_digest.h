// A digest of one rank's step as the cross-rank exchange summarises it (cross_rank_exchange.h): each
// variable's last record of the step, reduced to the fields the summary keeps, less those that name the
// rank itself (process, thread, time, rank). Replicas in sync have equal digests for a step, and a peer's
// step whose digest equals this rank's need not be fetched: the checks that judge by digest
// (OnlineCheck::judges_peer_steps_by_digest) know that nothing they compare differs.
//
// Order-independent (a sum of mixed per-variable digests, each a sum of mixed per-field ones), so the two
// ranks' field and variable orders, which follow their own interning, do not matter; the same in every
// process of a build (short_text_hash, no seed). Values are hashed by kind and content: 2 and 2.0
// differ, a float by its bits (a difference there only costs the fetch a match would have saved).
#pragma once

#include <cstdint>
#include <vector>

#include "trace/key_table.h"
#include "trace/record.h"

namespace traincheck {

class StepDigester {
 public:
  // `kept`: the fields a summary keeps; those naming the rank itself (is_rank_identity_key) are left out.
  explicit StepDigester(const std::vector<KeyId>& kept);
  // One variable's record: the sum of its fields' digests.
  uint64_t of(const Record& record) const;
  // One field's part of it (0 for a field not digested).
  uint64_t field_digest(const Field& f) const;
  // A step's, from its variables' digests (any order).
  static uint64_t combine(const std::vector<uint64_t>& variables);

 private:
  std::vector<uint64_t> key_hash_;  // by KeyId: the field name's hash; 0 when the field is not digested
};

}  // namespace traincheck
