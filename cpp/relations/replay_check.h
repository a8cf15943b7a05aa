// Offline checking as a replay of a relation's online check: one implementation of a
// relation's judgement, two drivers. Online, the OnlineChecker feeds the check records as they are
// written; offline, replay_check feeds it the stored trace's records, in the order they were written (the
// store's time order), then the end of the trace. The offline results are the online check's violations,
// their records named by their index in the store.
//
// Only the records the check's OnlineInterest names are fed (calls found through the store's indexes, so a
// check costs what its records cost, not the trace's size; state records of its var types by one scan, or,
// for a check that acts on one attribute's changes only (OnlineInterest::var_attribute, var_name), the
// first record of each of that attribute's states, from the store's histories, streamed: one cursor per
// history merged by record index, never one array of them). A violation's records are found in the store
// by their time and place.
// Records get the context managers live on their thread at their time (TraceStore::context_managers_at)
// when the invariant's precondition names one, as the online checker adds them
// (check/online/online_context_managers.h).
//
// Where the trace lost records (TraceStore::gaps), the check is told (OnlineCheck::on_records_lost) before
// the first record it is fed after them, as the online checker tells it where its reader found the loss.
//
// The store's records outlive the check, so it is told so (OnlineCheck::feed_lasting_records) and keeps
// pointers to the records it holds instead of copies (invariant/held_record.h); records given context
// managers are copies in one reused buffer, and are copied as online.
//
// Relations checked this way: APIContainRelation, DistinctArgumentRelation, FunctionCoverRelation,
// FunctionLeadRelation, the per-call ones (ConsistentOutput, ConsistentInputOutput, Threshold, ModuleMode:
// call_checks.h) and the claims at optimizer steps (every StepClaimRelation: step_claims.h), which are
// fed the state records of their var type. APIContain's var-child check is fed its attribute's state
// starts only (of its variable only, for a VarNameParam): fed every state record of the type, once per
// invariant, it costs several times the offline loop's check time and peak RSS; fed the starts, the
// same (bench/README.md, memory_bench).
// One keeps an offline driver of its own, over the verdict it shares with its online check:
//   - ConsistencyRelation: the pair verdict (step ends, grouping and counting by precondition, value
//     comparison) is one, consistency_pairs.h, and both drivers are small. A replay would change the
//     offline results in two ways the goldens pin: the violations kept are the first 1000 per invariant
//     in step order, then in the order of the instances in the trace (online: per step, in the order the
//     second end finished, which a replay could only restore by holding every step's pairs); and a pair's
//     context-manager fields come from its earlier record offline (the original's enrichment of the
//     pair), from each record's own live managers online.
#pragma once

#include "invariant/relation.h"
#include "trace/trace_store.h"

namespace traincheck {

CheckResult replay_check(const TraceStore& trace, const Invariant& invariant, OnlineCheck& check, const CheckOptions& options);

}  // namespace traincheck
