// The job's torch.distributed c10d store as a PeerStore (check/online/peer_store.h): the thin part of in-process
// cross-rank checking that must touch Python objects. Each call takes the GIL for the Python call only;
// c10d's store methods release it while they wait on the network. Called from the cross-rank exchange's
// I/O thread only, never with a lock of ours held (check/online/cross_rank_exchange.h).
#pragma once

#include <nanobind/nanobind.h>

#include "check/online/peer_store.h"

namespace traincheck {

class PythonPeerStore final : public PeerStore {
 public:
  // `resolve`: a callable returning None while the job has no store yet, else (store, rank, world_size)
  // (traincheck.cross_rank.find_store).
  explicit PythonPeerStore(nanobind::object resolve);
  ~PythonPeerStore() override;

  std::optional<PeerGroup> connect() override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  bool check(const std::vector<std::string>& keys) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys) override;
  void erase(const std::string& key) override;
  std::string set_if_absent(const std::string& key, const std::string& value) override;

 private:
  nanobind::object resolve_;
  nanobind::object store_;
};

}  // namespace traincheck
