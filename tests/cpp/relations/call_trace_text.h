// Test helper for the relation tests that build a record in code to reach an internal API (argument
// binding, returned tensors, online state bounds): JSONL text of API calls on one thread (pre and post
// records, one time unit apart). What a trace makes a relation learn or find is a data case instead:
// tests/cpp/data/relation_cases/README.md.
#pragma once

#include <cstdint>
#include <string>

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
