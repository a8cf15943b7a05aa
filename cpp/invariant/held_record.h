// A record an online check keeps after on_record returns (a call's pre-record, evidence for a later
// violation): a pointer to the record when its driver feeds records that last (OnlineCheck::
// feed_lasting_records: replay_check feeds the store's), else a copy. Online, records are parsed into
// buffers reused for the next ones, so they must be copied; offline, copying each call's pre-record made
// the replayed checks slower than the loops over the store they replaced (bench/README.md).
#pragma once

#include <optional>

#include "trace/record.h"

namespace traincheck {

class HeldRecord {
 public:
  HeldRecord() = default;
  HeldRecord(const Record& record, bool lasting) { hold(record, lasting); }
  HeldRecord(const HeldRecord& other) : copy_(other.copy_), record_(copy_ ? &*copy_ : other.record_) {}
  HeldRecord(HeldRecord&& other) noexcept : copy_(std::move(other.copy_)), record_(copy_ ? &*copy_ : other.record_) {}
  HeldRecord& operator=(const HeldRecord& other) {
    if (this != &other) {
      copy_ = other.copy_;
      record_ = copy_ ? &*copy_ : other.record_;
    }
    return *this;
  }
  HeldRecord& operator=(HeldRecord&& other) noexcept {
    copy_ = std::move(other.copy_);
    record_ = copy_ ? &*copy_ : other.record_;
    return *this;
  }

  // Keeps `record`: by address when `lasting` (it outlives this), else as a copy (reusing the storage
  // of the one held before).
  void hold(const Record& record, bool lasting) {
    if (lasting) {
      copy_.reset();
      record_ = &record;
    } else {
      copy_ = record;
      record_ = &*copy_;
    }
  }
  bool has_value() const { return record_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  const Record& operator*() const { return *record_; }
  const Record* operator->() const { return record_; }

 private:
  std::optional<Record> copy_;
  const Record* record_ = nullptr;
};

}  // namespace traincheck
