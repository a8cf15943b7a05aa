// Gives the training process's freed heap memory back to the kernel when its resident size grows.
//
// Why (docs/collection.md §Memory): glibc raises its mmap threshold to the size of the first large
// block freed (up to 32 MiB), so from then on tensors of up to that size live in the brk heap. torch
// allocates them with posix_memalign, which asks for size + alignment + 32 bytes and frees the leading
// and trailing slivers into the thread's tcache, where they never coalesce. A tensor's hole is then a
// few bytes too small for the next tensor of the same size, which takes fresh memory at the top of the
// heap: resident memory grows by a tensor or two per step, unbounded. Whether a program falls into
// this depends on which small blocks are taken between the frees, so a tool that reads tensor
// attributes on the training thread (torch allocates small blocks to answer) can tip a program that
// was steady into growing: the seed Transformer went from 478 MB to an OOM kill at 24 GB.
//
// Freezing the mmap threshold avoids the holes but made every large tensor a fresh mapping, zeroed
// and faulted in on each step: 1.2-2.5x slower per iteration on the CPU workloads. So instead the
// recorder's writer thread watches the resident size, and when it has grown by `step_bytes` since the
// last check-point it calls malloc_trim(0), which hands the pages of every free hole back to the
// kernel (madvise) without moving or changing any live block. A program whose memory is steady never
// grows by `step_bytes` and is never trimmed; a fragmenting one is held within `step_bytes` of its live
// memory; one that truly grows pays one trim per `step_bytes` of growth.
#pragma once

#include <cstdint>
#include <functional>

namespace traincheck {

struct HeapReclaimStats {
  uint64_t trims = 0;           // malloc_trim calls made
  uint64_t released_bytes = 0;  // resident bytes given back, summed over the trims
  uint64_t peak_rss_bytes = 0;  // the largest resident size seen at a poll
};

class HeapReclaimer {
 public:
  using RssReader = std::function<uint64_t()>;  // the process's resident bytes (0: unknown)
  using Trimmer = std::function<void()>;        // gives free heap pages back to the kernel

  // step_bytes == 0 turns the reclaimer off (poll() does nothing).
  HeapReclaimer(uint64_t step_bytes, RssReader read_rss, Trimmer trim);
  // The process's own resident size and malloc_trim(0) (nothing where the C library has no trim).
  explicit HeapReclaimer(uint64_t step_bytes);

  // Called by the writer thread once per pass: trims when the resident size passed the mark.
  void poll();
  const HeapReclaimStats& stats() const { return stats_; }
  uint64_t step_bytes() const { return step_bytes_; }

 private:
  uint64_t step_bytes_;
  RssReader read_rss_;
  Trimmer trim_;
  uint64_t mark_ = 0;  // resident size after the last trim (or at the first poll)
  HeapReclaimStats stats_;
};

// The resident size of this process from /proc/self/statm (0 if it cannot be read).
uint64_t process_rss_bytes();

}  // namespace traincheck
