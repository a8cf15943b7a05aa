#include "check/online/node_fold_exchange.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "check/online/cross_rank_exchange.h"
#include "trace/record_frames.h"

namespace traincheck {

namespace {

std::string fold_key(int64_t step) { return "fold/s" + std::to_string(step); }
std::string ref_key(int64_t step) { return "ref/s" + std::to_string(step); }
std::string ref_chunk_key(int64_t step, size_t i) { return ref_key(step) + "/c" + std::to_string(i); }

struct Fold {
  uint64_t fold = 0;
  int rank = 0;
  int64_t process_id = 0;
  std::optional<uint64_t> previous;  // its node's fold of the step before, when it published that one
};

std::string fold_value(const Fold& f) {
  char text[96];
  std::snprintf(text, sizeof text, "%llx %d %lld", static_cast<unsigned long long>(f.fold), f.rank,
                static_cast<long long>(f.process_id));
  std::string value = text;
  if (f.previous) {
    std::snprintf(text, sizeof text, " %llx", static_cast<unsigned long long>(*f.previous));
    value += text;
  }
  return value;
}

// nullopt when the value is not "<hex> <rank> <process id>[ <hex>]" (written by no leader of ours).
std::optional<Fold> parse_fold(const std::string& value) {
  const char* p = value.c_str();
  char* end = nullptr;
  errno = 0;
  Fold f;
  f.fold = std::strtoull(p, &end, 16);
  if (end == p || *end != ' ') return std::nullopt;
  p = end;
  const long rank = std::strtol(p, &end, 10);
  if (end == p || *end != ' ' || rank < 0 || rank > (1L << 30)) return std::nullopt;
  p = end;
  f.process_id = std::strtoll(p, &end, 10);
  if (end == p || errno == ERANGE) return std::nullopt;
  f.rank = static_cast<int>(rank);
  if (*end == '\0') return f;
  p = end;
  const uint64_t previous = std::strtoull(p, &end, 16);
  if (end == p || *p != ' ' || *end != '\0' || errno == ERANGE) return std::nullopt;
  f.previous = previous;
  return f;
}

}  // namespace

NodeFoldExchange::NodeFoldExchange(PeerStore& job, int rank, int64_t keep_steps)
    : rank_(rank), keep_steps_(keep_steps), job_(job) {}

void NodeFoldExchange::publish(int64_t step, uint64_t fold, int64_t process_id, const std::string& summary, bool trusted) {
  std::optional<uint64_t> previous;
  if (last_ && last_->step == step - 1 && last_->trusted) previous = last_->fold;
  const std::string mine = fold_value(Fold{fold, rank_, process_id, previous});
  const std::string now = job_.set_if_absent(fold_key(step), mine);
  ++stats_.folds_published;
  last_step_ = step;
  last_ = Last{step, fold, trusted};
  const std::optional<Fold> reference = parse_fold(now);
  if (now == mine) {
    // The step's reference: its records for the nodes whose fold differs, under the bounds of a step key.
    uint64_t too_large = 0;
    std::vector<std::string> chunks;
    if (summary.size() > kInlineSummaryBytes) chunks = chunk_record_frames(summary, kMaxStoreValueBytes, too_large);
    stats_.lines_too_large += too_large;
    for (size_t i = 0; i < chunks.size(); ++i) job_.multi_set({ref_chunk_key(step, i)}, {chunks[i]});
    job_.multi_set({ref_key(step)}, {std::to_string(chunks.size()) + "\n" + (chunks.empty() ? summary : std::string())});
    won_.push_back(Won{step, chunks.size()});
    ++stats_.references_published;
    stats_.chunks_published += chunks.size();
  } else if (!reference) {
    ++stats_.references_missing;  // no leader of ours wrote it: nothing to compare with
  } else if (reference->fold == fold && trusted) {
    matched_.push_back(Got{step, reference->rank, {}, reference->process_id});
    ++stats_.folds_matched;
  } else {
    // The reference's records come next. Its step before, when its fold there was this node's, is
    // told matched first: the checker then knows the reference's values up to that step (a peer's
    // variable first seen would have its first state left out of pairs, and this step not compared).
    if (previous && reference->previous == previous)
      matched_.push_back(Got{step - 1, reference->rank, {}, reference->process_id});
    pending_.push_back(Pending{step, reference->rank});
    ++stats_.folds_differing;
  }
  while (!won_.empty() && won_.front().step <= step - keep_steps_) {
    const Won old = won_.front();
    job_.erase(fold_key(old.step));
    job_.erase(ref_key(old.step));
    for (size_t i = 0; i < old.chunks; ++i) job_.erase(ref_chunk_key(old.step, i));
    won_.pop_front();
  }
}

std::vector<NodeFoldExchange::Got> NodeFoldExchange::poll(std::optional<std::string>& failure) {
  std::vector<Got> out;
  out.swap(matched_);
  std::vector<Pending> still;
  size_t i = 0;
  try {
    for (; i < pending_.size(); ++i) {
      const Pending& p = pending_[i];
      if (!job_.check({ref_key(p.step)})) {
        if (last_step_ && p.step <= *last_step_ - keep_steps_) ++stats_.references_missing;  // never there, or deleted
        else still.push_back(p);
        continue;
      }
      const std::string value = job_.multi_get({ref_key(p.step)}).at(0);
      const size_t eol = value.find('\n');
      const size_t chunks = eol == std::string::npos ? 0 : std::strtoull(value.c_str(), nullptr, 10);
      Got got{p.step, p.rank, {}, std::nullopt};
      if (eol != std::string::npos && chunks == 0) got.text = value.substr(eol + 1);
      for (size_t c = 0; c < chunks && c < 4096; ++c) {
        if (!job_.check({ref_chunk_key(p.step, c)})) {
          ++stats_.references_missing;
          continue;
        }
        got.text += job_.multi_get({ref_chunk_key(p.step, c)}).at(0);
      }
      out.push_back(std::move(got));
    }
  } catch (const std::exception& e) {
    failure = e.what();
    still.insert(still.end(), pending_.begin() + static_cast<std::ptrdiff_t>(i), pending_.end());
  }
  pending_.swap(still);
  return out;
}

}  // namespace traincheck
