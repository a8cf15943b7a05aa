// The node-local channel of per-node cross-rank checking (cross_rank_topology.h): the ranks of one node
// exchange their step summaries through a directory of files in /dev/shm (memory, no server, no port, no
// Python), with the same PeerStore calls the job's store gets; the job's store carries only its name.
//
// - Start: the node's leader (local rank 0) creates a fresh directory (mkdtemp: never a stale one of an
//   earlier job) and sets its path under "node/n<node>" in the job's store; the other local ranks read
//   that key once (NodeChannel::open, asked at each connect try until it is there, never waited for).
// - End: each rank leaves a mark (leave()); the rank that finds every local rank's mark removes the
//   directory and all it holds. A rank that died leaves none: the directory stays, holding at
//   most the window's summaries of each rank.
// - A local rank that dies stops publishing: the others report it as lagging or stopped, as any peer
//   (cross_rank_exchange.h), and keep checking each other. A leader that never announces the directory
//   (it died first) leaves its node's other ranks unconnected: the exchange turns itself off with one
//   line after CrossRankOptions::node_wait_ms.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check/online/peer_store.h"

namespace traincheck {

// One key per file: a set writes a temporary file and renames it over the key's, so a reader sees a
// whole value or none; set_if_absent links it instead (atomic, fails if the key exists). Errors name the
// file.
class FilePeerStore final : public PeerStore {
 public:
  FilePeerStore(std::string dir, PeerGroup group) : dir_(std::move(dir)), group_(group) {}
  const std::string& dir() const { return dir_; }

  std::optional<PeerGroup> connect() override { return group_; }
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  bool check(const std::vector<std::string>& keys) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys) override;
  void erase(const std::string& key) override;
  std::string set_if_absent(const std::string& key, const std::string& value) override;

 private:
  std::string path_of(const std::string& key) const;
  std::string write_temporary(const std::string& value) const;  // its path
  std::string dir_;
  PeerGroup group_;
};

// The job-store key naming node `node`'s directory.
std::string node_channel_key(int node);

class NodeChannel {
 public:
  // `job`: the job's store (not owned; the I/O thread's). `root`: where the leader creates the directory.
  NodeChannel(PeerStore& job, int node, int local_rank, int local_world, std::string root);
  // One try, without waiting: the node's store, numbered by local rank; nullopt while the leader has not
  // announced it. Throws what the job's store throws, or a runtime_error naming the directory the leader
  // could not create.
  std::unique_ptr<FilePeerStore> open();
  // This rank is done with the channel: marks it, and removes the directory once every local rank has.
  // Never throws.
  void leave();
  const std::string& dir() const { return dir_; }

 private:
  PeerStore& job_;
  int node_, local_rank_, local_world_;
  std::string root_, dir_;
};

// The directory under which leaders create their nodes' channels: /dev/shm where it exists, else the
// temporary directory.
std::string default_node_channel_root();

}  // namespace traincheck
