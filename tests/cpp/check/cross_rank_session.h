// One rank of a simulated job in the cross-rank tests: an online session fed its own rank's trace lines
// through the record sink, as the recorder's writer thread feeds it, exchanging through an in-memory
// store shared by the job's ranks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "check/online/cross_rank_exchange.h"
#include "check/online/online_session.h"
#include "testing/memory_peer_store.h"

namespace traincheck::testing {

struct SessionRank {
  std::unique_ptr<OnlineSession> session;
  TcRecordSink sink{};
  MemoryPeerStore* store = nullptr;  // owned by the session's exchange

  void feed(const std::string& text) {
    ASSERT_EQ(sink.on_lines(sink.context, TC_SINK_VAR, 100, 7, text.data(), text.size()), 0u);
    ASSERT_EQ(sink.on_pass_end(sink.context), 0u);
  }
  CrossRankStats stats() const { return *session->cross_rank_stats(); }
};

// A rank checking `invariant_file`, writing to `output_dir`, exchanging as `group` through `store` (never
// connected while `connected` is false: a job whose torch.distributed never starts on that rank).
inline SessionRank start_session_rank(const std::string& invariant_file, const std::string& output_dir,
                                      std::shared_ptr<MemoryStoreData> store, PeerGroup group, const CrossRankOptions& options,
                                      bool connected = true) {
  OnlineSessionOptions o;
  o.invariant_files = {invariant_file};
  o.output_dir = output_dir;
  o.report_interval_s = 0;
  // The records' times are synthetic (a few ns apart), so the writer's "lag" grows with the test's
  // wall time: a slow machine took 11 s for the 20,000-parameter test and shed checking mid-test.
  // Shedding has its own test (online_session_test.cpp).
  o.max_lag_s = 1e9;
  SessionRank rank;
  rank.session = std::make_unique<OnlineSession>(o);
  auto peer_store = std::make_unique<MemoryPeerStore>(std::move(store), group, connected);
  rank.store = peer_store.get();
  rank.session->enable_cross_rank(std::move(peer_store), options);
  rank.sink = rank.session->sink();
  return rank;
}

// Polls fast, waits little at the end, and keeps a window of 4 steps whatever their size (the window
// tests set keep_bytes).
inline CrossRankOptions fast_cross_rank_options() {
  CrossRankOptions o;
  o.poll_ms = 2;
  o.final_wait_ms = 500;
  o.keep_steps = 4;
  o.keep_bytes = 0;
  return o;
}

// The invariant inference learns from data-parallel runs: one variable name's data equal across ranks,
// judged by digest (OnlineChecker::peer_steps_by_digest).
inline std::string learned_invariant() {
  std::ifstream in(std::filesystem::path(TC_TEST_DATA_DIR) / "relation_cases" / "consistency" / "ranks_learned" /
                   "expected_invariants.jsonl");
  std::string line;
  std::getline(in, line);
  return line + "\n";
}

}  // namespace traincheck::testing
