#include "record/event_stream.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace traincheck {

namespace {

// Chunks are mappings of their own, never blocks of the C library's heap: a 1 MiB block taken from
// the heap on the training thread would sit among the training's tensors (glibc serves blocks below
// its mmap threshold, raised up to 32 MiB by the first large free, from the heap) and keep their
// freed space from coalescing (record/heap_reclaimer.h tells the rest of that story).
Chunk* map_chunk() {
  void* p = ::mmap(nullptr, sizeof(Chunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) Chunk();
}

void unmap_chunk(Chunk* c) {
  c->~Chunk();
  ::munmap(c, sizeof(Chunk));
}

}  // namespace

ChunkPool::~ChunkPool() {
  // Every chunk, including those still linked into streams: a pool outlives its streams (the process's
  // recorder is never destroyed; a test's pool is destroyed after its streams).
  for (Chunk* c : owned_) unmap_chunk(c);
}

Chunk* ChunkPool::fresh_chunk() {
  Chunk* c = map_chunk();
  if (c == nullptr) return nullptr;
  std::memset(c->data, 0, sizeof c->data);  // fault the pages in now, not mid-step
  std::lock_guard<std::mutex> lock(mutex_);
  owned_.push_back(c);
  return c;
}

Chunk* ChunkPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      Chunk* c = free_.back();
      free_.pop_back();
      return c;
    }
  }
  if (allocated_.load(std::memory_order_relaxed) >= max_chunks_) return nullptr;
  Chunk* c = fresh_chunk();
  if (c != nullptr) allocated_.fetch_add(1, std::memory_order_relaxed);
  return c;
}

void ChunkPool::release(Chunk* chunk) {
  chunk->committed.store(0, std::memory_order_relaxed);
  chunk->sealed.store(false, std::memory_order_relaxed);
  chunk->next = nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(chunk);
}

void ChunkPool::prefill(size_t spare) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_.size() >= spare) return;
    }
    if (allocated_.load(std::memory_order_relaxed) >= max_chunks_) return;
    Chunk* c = fresh_chunk();
    if (c == nullptr) return;
    allocated_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(c);
  }
}

void ChunkPool::fork_child() {
  // Locked by fork_prepare in the thread that forked, the only thread of the child: a fresh mutex.
  // Chunks referenced by the parent's streams are abandoned (the parent writes those events itself).
  new (&mutex_) std::mutex();
}

EventStream::EventStream(ChunkPool& pool, uint64_t thread_id, const std::string& call_uuid)
    : pool_(pool), thread_id_(thread_id), call_uuid_(call_uuid) {}

std::byte* EventStream::reserve_slow(uint32_t bytes) {
  if (bytes > Chunk::kBytes) return nullptr;
  Chunk* fresh = pool_.acquire();
  if (fresh == nullptr) return nullptr;
  if (head_ == nullptr) {
    head_ = fresh;
    head_pos_ = 0;
    first_.store(fresh, std::memory_order_release);
  } else {
    head_->next = fresh;
    head_->sealed.store(true, std::memory_order_release);
    head_ = fresh;
    head_pos_ = 0;
  }
  return head_->data;
}

}  // namespace traincheck
