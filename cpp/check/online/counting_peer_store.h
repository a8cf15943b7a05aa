// A PeerStore that counts the calls made to another one and the bytes they moved (keys and values, both
// ways): what the cross-rank exchange costs the job's store, whichever mode it runs in.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check/online/peer_store.h"

namespace traincheck {

class CountingPeerStore final : public PeerStore {
 public:
  explicit CountingPeerStore(std::unique_ptr<PeerStore> inner) : inner_(std::move(inner)) {}

  // Read from any thread. A call is counted when made (a call that throws too), the bytes it got once it returns.
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  std::optional<PeerGroup> connect() override { return inner_->connect(); }
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) override {
    count(size_of(keys) + size_of(values));
    inner_->multi_set(keys, values);
  }
  bool check(const std::vector<std::string>& keys) override {
    count(size_of(keys) + 1);
    return inner_->check(keys);
  }
  std::vector<std::string> multi_get(const std::vector<std::string>& keys) override {
    count(size_of(keys));
    std::vector<std::string> values = inner_->multi_get(keys);
    bytes_.fetch_add(size_of(values), std::memory_order_relaxed);
    return values;
  }
  void erase(const std::string& key) override {
    count(key.size());
    inner_->erase(key);
  }
  std::string set_if_absent(const std::string& key, const std::string& value) override {
    count(key.size() + value.size());
    std::string now = inner_->set_if_absent(key, value);
    bytes_.fetch_add(now.size(), std::memory_order_relaxed);
    return now;
  }

 private:
  static size_t size_of(const std::vector<std::string>& v) {
    size_t n = 0;
    for (const std::string& s : v) n += s.size();
    return n;
  }
  void count(size_t bytes) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  std::unique_ptr<PeerStore> inner_;
  std::atomic<uint64_t> calls_{0}, bytes_{0};
};

}  // namespace traincheck
