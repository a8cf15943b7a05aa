// A thread's stream of events: a single-producer single-consumer chain of fixed-size chunks.
//
// The training thread (producer) appends events into its current chunk and publishes them with one
// release store; it takes the pool's lock only when a chunk is full (once per ~1 MiB of events). The
// writer thread (consumer) reads published events in place, so nothing is copied on the training thread,
// and a partly filled chunk is drained within one writer period (what bounds the loss after SIGKILL).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/assert.h"

namespace traincheck {

struct Chunk {
  static constexpr uint32_t kBytes = 1u << 20;
  std::atomic<uint32_t> committed{0};  // bytes published by the producer
  std::atomic<bool> sealed{false};     // the producer moved on to `next` (set after the last commit)
  Chunk* next = nullptr;               // valid once sealed
  alignas(64) std::byte data[kBytes];
};

// Recycles drained chunks so the training thread writes into memory that is already resident.
class ChunkPool {
 public:
  explicit ChunkPool(size_t max_chunks) : max_chunks_(max_chunks) {}
  ~ChunkPool();
  Chunk* acquire();  // nullptr when the memory cap is reached (the caller drops and counts)
  void release(Chunk* chunk);
  void prefill(size_t spare);  // called by the writer: keep `spare` touched chunks ready
  // fork(): the pool's lock is held across the fork so the child never inherits it mid-update.
  void fork_prepare() { mutex_.lock(); }
  void fork_parent() { mutex_.unlock(); }
  void fork_child();
  size_t allocated() const { return allocated_.load(std::memory_order_relaxed); }

 private:
  Chunk* fresh_chunk();  // allocates and owns a chunk (nullptr when out of memory)
  std::mutex mutex_;
  std::vector<Chunk*> free_;
  std::vector<Chunk*> owned_;  // every chunk allocated, freed with the pool
  size_t max_chunks_;
  std::atomic<size_t> allocated_{0};
};

class EventStream {
 public:
  EventStream(ChunkPool& pool, uint64_t thread_id, const std::string& call_uuid);
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // Producer side (owning thread only). reserve() returns space for `bytes` (<= Chunk::kBytes) or nullptr
  // when memory is exhausted; commit() publishes everything reserved so far.
  std::byte* reserve(uint32_t bytes) {
    if (head_ != nullptr && head_pos_ + bytes <= Chunk::kBytes) return head_->data + head_pos_;
    return reserve_slow(bytes);
  }
  // (The checks cost nothing in Release, where NDEBUG drops them: this is the training thread.)
  void commit(uint32_t bytes) {
    TC_ASSERT(head_ != nullptr && head_pos_ + bytes <= Chunk::kBytes, "commit() follows a reserve() of as many bytes");
    TC_ASSERT(bytes % 8 == 0, "events keep 8-byte alignment");
    head_pos_ += bytes;
    head_->committed.store(head_pos_, std::memory_order_release);
  }
  void count_dropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  void mark_thread_exited() { thread_exited_.store(true, std::memory_order_release); }

  // Consumer side (writer thread only). Calls `visit(const std::byte* event)` for every published event
  // in order and recycles drained chunks. Returns the number of events visited.
  template <class Visit>
  size_t drain(Visit&& visit);

  bool thread_exited() const { return thread_exited_.load(std::memory_order_acquire); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t thread_id() const { return thread_id_; }
  const std::string& call_uuid() const { return call_uuid_; }

 private:
  std::byte* reserve_slow(uint32_t bytes);

  ChunkPool& pool_;
  const uint64_t thread_id_;
  const std::string call_uuid_;  // 32 hex digits, the first half of func_call_id
  // Producer state.
  Chunk* head_ = nullptr;
  uint32_t head_pos_ = 0;
  // Consumer state.
  Chunk* tail_ = nullptr;
  uint32_t tail_pos_ = 0;
  std::atomic<Chunk*> first_{nullptr};  // hands the first chunk to the consumer
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> thread_exited_{false};
};

template <class Visit>
size_t EventStream::drain(Visit&& visit) {
  if (tail_ == nullptr) {
    tail_ = first_.load(std::memory_order_acquire);
    if (tail_ == nullptr) return 0;
  }
  size_t visited = 0;
  for (;;) {
    const bool sealed = tail_->sealed.load(std::memory_order_acquire);
    const uint32_t end = tail_->committed.load(std::memory_order_acquire);
    while (tail_pos_ < end) {
      const std::byte* event = tail_->data + tail_pos_;
      uint32_t size;
      std::memcpy(&size, event, sizeof size);
      TC_ASSERT(size > 0 && size % 8 == 0 && tail_pos_ + size <= end, "an event's size field spans whole events");
      visit(event);
      tail_pos_ += size;
      ++visited;
    }
    if (!sealed) return visited;
    // Sealed means no further commits to this chunk: everything was just read.
    Chunk* next = tail_->next;
    pool_.release(tail_);
    tail_ = next;
    tail_pos_ = 0;
  }
}

}  // namespace traincheck
