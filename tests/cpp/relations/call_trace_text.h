// Test helpers for relations judged per call (call_checks.h): JSONL text of API calls on one thread (pre
// and post records, one time unit apart), running an online check over a finished trace, and the
// steps of violations.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "invariant/relation.h"
#include "relations/call_checks.h"

struct CallTraceText {
  std::string text;
  int64_t time = 1000;
  int id = 0;
  void call(const std::string& fn, int step, const std::string& post_extra, const std::string& pre_args = "\"args\":{},\"kwargs\":{}",
            const std::string& post_type = "function_call (post)") {
    const std::string cid = "c" + std::to_string(id++);
    auto head = [&](const std::string& type) {
      return "{\"func_call_id\":\"" + cid + "\",\"thread_id\":7,\"process_id\":1,\"meta_vars\":{\"step\":" +
             std::to_string(step) + ",\"stage\":\"training\"},\"type\":\"" + type + "\",\"function\":\"" + fn +
             "\",\"is_bound_method\":false,\"obj_id\":5,";
    };
    text += head("function_call (pre)") + pre_args + ",\"time\":" + std::to_string(time++) + "}\n";
    text += head(post_type) + post_extra + "\"time\":" + std::to_string(time++) + "}\n";
  }
};

// Feeds every record of `t` to `rel`'s online check of `inv`; every call must have closed by the end.
inline std::vector<traincheck::OnlineViolation> run_call_online(const traincheck::Relation& rel, const traincheck::TraceStore& t,
                                                                const traincheck::Invariant& inv, bool* triggered = nullptr) {
  std::unique_ptr<traincheck::OnlineCheck> check = rel.make_online_check(inv);
  std::vector<traincheck::OnlineViolation> violations;
  for (const traincheck::Record& r : t.records()) check->on_record(r, violations);
  if (triggered) *triggered = check->triggered();
  EXPECT_EQ(static_cast<traincheck::CallOnlineCheck*>(check.get())->open_calls(), 0u);
  return violations;
}

inline std::vector<int64_t> offline_steps(const traincheck::TraceStore& t, const traincheck::CheckResult& r) {
  std::vector<int64_t> out;
  for (const traincheck::Violation& v : r.violations) out.push_back(t.record(v.records[0]).step);
  return out;
}

inline std::vector<int64_t> online_steps(const std::vector<traincheck::OnlineViolation>& vs) {
  std::vector<int64_t> out;
  for (const traincheck::OnlineViolation& v : vs) out.push_back(v.records[0].step);
  return out;
}
