// How the cross-rank exchange (cross_rank_exchange.h) reaches its peers: the job's store, the plan chosen
// from the job's shape (cross_rank_topology.h) and, per node, the node's channel (node_channel.h) and a
// leader's folds (node_fold_exchange.h). The I/O thread's, under the exchange's lock unless said.
#include <cstdio>

#include "check/online/cross_rank_exchange.h"

namespace traincheck {

bool CrossRankExchange::connect(std::unique_lock<std::mutex>& lock) {
  if (store_) return true;
  // Until the job sets torch.distributed up, asked every few polls only: each try takes the GIL.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_connect_) return false;
  next_connect_ = now + std::chrono::milliseconds(10 * options_.poll_ms);
  const bool had_group = stats_.group.has_value();
  lock.unlock();  // connect() may wait for the GIL: never with our lock held (see the header)
  std::optional<PeerGroup> group;
  std::unique_ptr<FilePeerStore> node_store;
  std::optional<std::string> failure;
  try {
    if (!had_group) group = job_store_->connect();
    else if (channel_) node_store = channel_->open();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  lock.lock();
  if (failure) {
    note_error(std::runtime_error(*failure));
    return false;
  }
  if (!had_group) {
    if (!group) return false;
    choose_plan(*group);
    if (!channel_) {
      store_ = job_store_.get();
      return true;
    }
    channel_since_ = now;
    next_connect_ = now;  // the node's channel at the next round
    return false;
  }
  if (!node_store) {
    // Its leader never announced it (it died first, or never started): one line, and no exchange.
    if (now - channel_since_ > std::chrono::milliseconds(options_.node_wait_ms)) {
      disabled_ = true;
      std::fprintf(stderr,
                   "traincheck: cross-rank check off in process rank %d: node %d's leader (local rank 0) has not opened "
                   "its node channel in %d ms\n",
                   stats_.group->rank, plan_.node, options_.node_wait_ms);
    }
    return false;
  }
  node_store_ = std::move(node_store);
  store_ = node_store_.get();
  return true;
}

void CrossRankExchange::choose_plan(const PeerGroup& group) {
  stats_.group = group;
  const CrossRankLayout layout{group.rank, group.world_size, options_.local_rank, options_.local_world, options_.node};
  plan_ = plan_cross_rank(layout, options_.peers, options_.match_by_digest);
  stats_.mode = mode_name(plan_.mode);
  if (group.rank == 0) std::fprintf(stderr, "traincheck: cross-rank check: %s\n", plan_.description.c_str());
  for (int p : plan_.peers) stats_.peers.push_back(global_rank(p));
  if (plan_.mode != CrossRankMode::PerNode) return;
  stats_.node = plan_.node;
  stats_.leader = plan_.leader;
  channel_ = std::make_unique<NodeChannel>(*job_store_, plan_.node, plan_.local_rank, plan_.local_world,
                                           options_.node_root.empty() ? default_node_channel_root() : options_.node_root);
  // One node has no other to compare its fold with.
  if (plan_.leader && plan_.nodes > 1) fold_ = std::make_unique<NodeFoldExchange>(*job_store_, group.rank, options_.keep_steps);
}

int CrossRankExchange::global_rank(int peer) const {
  return plan_.mode == CrossRankMode::PerNode ? plan_.node * plan_.local_world + peer : peer;
}

void CrossRankExchange::poll_folds(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::optional<std::string> failure;
  std::vector<NodeFoldExchange::Got> got = fold_->poll(failure);
  lock.lock();
  stats_.folds = fold_->stats();
  if (failure) note_error(std::runtime_error(*failure));
  else if (!got.empty()) consecutive_errors_ = 0;
  for (NodeFoldExchange::Got& g : got) {
    ++stats_.summaries_received;
    if (g.matched_process) ++stats_.summaries_matched;
    else stats_.records_received += count_record_frames(g.text);
    inbox_.push_back(Received{g.step, g.rank, std::move(g.text), g.matched_process});
  }
}

}  // namespace traincheck
