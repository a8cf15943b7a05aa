// The key-value store through which the ranks of a job exchange their per-step summaries for in-process
// cross-rank checking (check/online/cross_rank_exchange.h). In training it is the job's own torch.distributed
// c10d store, reached through Python (cpp/bindings/python_peer_store.cpp); tests and benchmarks use an
// in-memory one (testing/memory_peer_store.h). This folder never links Python.
//
// Every call may throw std::exception (a store that went away, a closed connection); the exchange counts
// it and carries on. No call may wait for a key to appear: a rank that lags or died must never block
// the others.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace traincheck {

struct PeerGroup {
  int rank = 0;
  int world_size = 1;
};

class PeerStore {
 public:
  virtual ~PeerStore() = default;
  // The store once the job has one (torch.distributed is often set up after training starts, and the
  // recorder earlier): this process's rank and the world size; nullopt while there is none yet.
  virtual std::optional<PeerGroup> connect() = 0;
  // Sets every key to its value (one round trip).
  virtual void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) = 0;
  // Whether every key exists now.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // The values of keys that check() found.
  virtual std::vector<std::string> multi_get(const std::vector<std::string>& keys) = 0;
  virtual void erase(const std::string& key) = 0;
  // Sets `key` to `value` if it does not exist, in one atomic step; returns the key's value after the
  // call (`value` itself when this call set it). The first of many callers decides what all of them read
  // (node_fold_exchange.h: a step's reference fold).
  virtual std::string set_if_absent(const std::string& key, const std::string& value) = 0;
};

}  // namespace traincheck
