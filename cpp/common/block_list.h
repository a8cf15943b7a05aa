// A list appended one element at a time whose elements never move (pointers and references into it stay
// valid while it lives), kept in fixed blocks that come from, and go back to, a pool.
//
// What a Consistency check keeps per step (relations/consistency.h, StepEnds): 50k parameters' ends a
// step, freed 16 steps later. In a std::deque their blocks were allocated and freed afresh every step,
// and the heap handed the freed pages back to the kernel in between: faulting them in again was a third
// of the writer thread's checking at 50k parameters (bench/README.md, consistency_scale). Here a list's blocks
// go back to the pool when it is cleared or destroyed, and the next list takes them from there.
//
// A block taken from the pool still holds the elements it held (moved from, or as they were left):
// push_back move-assigns over them. So T must be default-constructible and move-assignable, and an
// element left in a pooled block keeps whatever it holds alive until it is overwritten.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace traincheck {

template <typename T, size_t kBlock = 256>
class BlockList {
 public:
  // Blocks lists gave back, at most max_blocks of them (the rest are freed). Must outlive its lists.
  class Pool {
   public:
    explicit Pool(size_t max_blocks) : max_blocks_(max_blocks) {}
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;
    size_t size() const { return free_.size(); }

   private:
    friend class BlockList;
    std::unique_ptr<T[]> take() {
      if (free_.empty()) return std::make_unique<T[]>(kBlock);
      std::unique_ptr<T[]> block = std::move(free_.back());
      free_.pop_back();
      return block;
    }
    void give(std::unique_ptr<T[]> block) {
      if (free_.size() < max_blocks_) free_.push_back(std::move(block));
    }
    size_t max_blocks_;
    std::vector<std::unique_ptr<T[]>> free_;
  };

  explicit BlockList(Pool& pool) : pool_(&pool) {}
  BlockList(BlockList&& o) noexcept : pool_(o.pool_), blocks_(std::move(o.blocks_)), size_(std::exchange(o.size_, 0)) {}
  BlockList& operator=(BlockList&& o) noexcept {
    if (this != &o) {
      clear();
      pool_ = o.pool_;
      blocks_ = std::move(o.blocks_);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  BlockList(const BlockList&) = delete;
  BlockList& operator=(const BlockList&) = delete;
  ~BlockList() { clear(); }

  T& push_back(T&& value) {
    if (size_ == blocks_.size() * kBlock) blocks_.push_back(pool_->take());
    T& slot = (*this)[size_];
    slot = std::move(value);
    ++size_;
    return slot;
  }
  // Gives every block back to the pool, its elements as they are.
  void clear() {
    for (std::unique_ptr<T[]>& block : blocks_) pool_->give(std::move(block));
    blocks_.clear();
    size_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return blocks_[i / kBlock][i % kBlock]; }
  const T& operator[](size_t i) const { return blocks_[i / kBlock][i % kBlock]; }
  T& back() { return (*this)[size_ - 1]; }

  template <typename List, typename Element>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = Element*;
    using reference = Element&;
    Iterator(List* list, size_t i) : list_(list), i_(i) {}
    Element& operator*() const { return (*list_)[i_]; }
    Element* operator->() const { return &(*list_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }

   private:
    List* list_;
    size_t i_;
  };
  using iterator = Iterator<BlockList, T>;
  using const_iterator = Iterator<const BlockList, const T>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  Pool* pool_;
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

}  // namespace traincheck
