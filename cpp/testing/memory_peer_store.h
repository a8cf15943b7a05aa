// An in-memory PeerStore (check/online/peer_store.h) shared by the "ranks" of a test or benchmark: one
// MemoryStoreData, one MemoryPeerStore per rank. It counts calls and can be made to fail, or to hide a
// rank's keys (a rank that lags or died), so the exchange's handling of both can be tested without a job.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check/online/peer_store.h"

namespace traincheck::testing {

struct MemoryStoreData {
  std::mutex mutex;
  std::map<std::string, std::string> values;
  uint64_t ops = 0;
  bool failing = false;  // every call throws, as a store whose server went away
  size_t max_call_bytes = 0;  // the most bytes one call set or got (keys and values)
};

class MemoryPeerStore final : public PeerStore {
 public:
  MemoryPeerStore(std::shared_ptr<MemoryStoreData> data, PeerGroup group, bool connected = true)
      : data_(std::move(data)), group_(group), connected_(connected) {}

  void set_connected(bool on) { connected_ = on; }
  // A slow store: each call waits this long first (a network round trip), outside the data's lock.
  std::atomic<int> call_delay_ms{0};

  std::optional<PeerGroup> connect() override {
    if (!connected_) return std::nullopt;
    return group_;
  }
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) override {
    locked([&] {
      size_t bytes = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        data_->values[keys[i]] = values.at(i);
        bytes += keys[i].size() + values.at(i).size();
      }
      data_->max_call_bytes = std::max(data_->max_call_bytes, bytes);
    });
  }
  bool check(const std::vector<std::string>& keys) override {
    return locked([&] {
      for (const std::string& k : keys)
        if (!data_->values.count(k)) return false;
      return true;
    });
  }
  std::vector<std::string> multi_get(const std::vector<std::string>& keys) override {
    return locked([&] {
      std::vector<std::string> out;
      size_t bytes = 0;
      for (const std::string& k : keys) {
        out.push_back(data_->values.at(k));
        bytes += k.size() + out.back().size();
      }
      data_->max_call_bytes = std::max(data_->max_call_bytes, bytes);
      return out;
    });
  }
  void erase(const std::string& key) override {
    locked([&] { data_->values.erase(key); });
  }
  std::string set_if_absent(const std::string& key, const std::string& value) override {
    return locked([&] { return data_->values.try_emplace(key, value).first->second; });
  }

 private:
  // Runs `f` on the shared data under its lock, counting the call; throws while the store is failing.
  template <typename F>
  auto locked(F&& f) -> decltype(f()) {
    if (const int delay = call_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    std::lock_guard<std::mutex> lock(data_->mutex);
    ++data_->ops;
    if (data_->failing) throw std::runtime_error("store unavailable");
    return f();
  }

  std::shared_ptr<MemoryStoreData> data_;
  PeerGroup group_;
  bool connected_;
};

}  // namespace traincheck::testing
