#include "testing/synthetic_trace.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "common/json_writer.h"

namespace traincheck {

namespace {

class Writer {
 public:
  explicit Writer(const SyntheticTraceSpec& s) : spec_(s), time_(s.start_time) {
    prefix_ = s.legacy_prefix ? "_ML_DAIKON_" : "_TRAINCHECK_";
  }

  void set_meta(int step, const char* stage) {
    step_ = step;
    stage_ = stage;
  }

  // Emits a pre record, runs `body`, then the post record; `compiled`: the call was made under torch.compile.
  template <typename Body>
  void call(const std::string& fn, bool bound, const std::string& args, const std::string& kwargs, Body&& body,
            bool compiled = false) {
    const std::string id = "0123456789abcdef0123456789abcdef_" + std::to_string(++call_counter_);
    api(id, "function_call (pre)", fn, bound,
        std::string(compiled ? "\"compiled\":true," : "") + "\"args\":" + args + ",\"kwargs\":" + kwargs);
    body();
    api(id, "function_call (post)", fn, bound, "\"return_values\":{\"NoneType\":null}");
  }
  void leaf(const std::string& fn, bool bound, const std::string& args = "{}", const std::string& kwargs = "{}") {
    call(fn, bound, args, kwargs, [] {});
  }

  void var_state(int param, int64_t data, bool has_grad, int64_t grad) {
    time_ += 100;
    std::string& o = var_;
    o += "{\"var_name\":\"model.layer";
    o += std::to_string(param);
    o += ".weight\",\"var_type\":\"torch.nn.Parameter\",";
    append_ids_and_meta(o, false);
    o += ",\"type\":\"state_change\",\"attributes\":{\"";
    o += prefix_;
    o += "data_ID\":";
    append_json_int(o, 140000000 + param);
    o += ",\"data\":";
    append_json_int(o, data);
    o += ",\"dtype\":\"torch.float32\",\"grad\":";
    if (has_grad) append_json_int(o, grad);
    else o += "null";
    o += ",\"is_cuda\":false,\"requires_grad\":true,\"shape\":[16,16],\"ndim\":2},\"time\":";
    append_json_int(o, time_);
    o += "}\n";
  }

  std::string api_text, var_;

 private:
  // "process_id":P,"thread_id":T (API records put the thread first, as the recorder writes them), then
  // ,"meta_vars":{...}.
  void append_ids_and_meta(std::string& o, bool thread_first) const {
    const char* keys[2] = {"\"process_id\":", "\"thread_id\":"};
    const int64_t ids[2] = {spec_.process_id, spec_.thread_id};
    for (int k = 0; k < 2; ++k) {
      const int i = thread_first ? 1 - k : k;
      if (k) o += ',';
      o += keys[i];
      append_json_int(o, ids[i]);
    }
    o += ",\"meta_vars\":{\"step\":" + std::to_string(step_) + ",\"stage\":\"" + stage_ + "\"}";
  }
  void api(const std::string& id, const char* type, const std::string& fn, bool bound, const std::string& extra) {
    time_ += 1000;
    std::string& o = api_text;
    o += "{\"func_call_id\":\"" + id + "\",";
    append_ids_and_meta(o, true);
    o += ",\"type\":\"";
    o += type;
    o += "\",\"function\":\"" + fn + "\",\"is_bound_method\":";
    o += bound ? "true,\"obj_id\":139900000001" : "false,\"obj_id\":null";
    o += "," + extra + ",\"time\":";
    append_json_int(o, time_);
    o += "}\n";
  }

  const SyntheticTraceSpec& spec_;
  int64_t time_;
  int step_ = 0;
  std::string stage_ = "init";
  std::string prefix_;
  int64_t call_counter_ = 0;
};

int64_t fake_hash(int step, int param, int salt) {
  uint64_t x = static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(param) * 0xBF58476D1CE4E5B9ULL +
               static_cast<uint64_t>(salt) * 0x94D049BB133111EBULL + 1;
  x ^= x >> 31;
  return static_cast<int64_t>(x | 1);
}

}  // namespace

uint64_t write_synthetic_trace(const std::string& folder, const SyntheticTraceSpec& spec) {
  Writer w(spec);
  w.set_meta(0, "init");
  for (int p = 0; p < spec.params; ++p) w.var_state(p, fake_hash(0, p, 1), false, 0);
  std::vector<int64_t> data(spec.params), grad(spec.params);
  std::vector<bool> has_grad(spec.params, false);
  for (int p = 0; p < spec.params; ++p) data[p] = fake_hash(0, p, 1);
  const std::string self = "{\"0\":{\"torch.optim.adam.Adam\":{}}}";
  auto detached = [&](int step, int p) { return p == 0 && spec.detach_first_param_from >= 0 && step >= spec.detach_first_param_from; };
  auto forward = [&] {
    for (int layer = 0; layer < 2; ++layer) {
      w.call("torch.nn.modules.linear.Linear.forward", true, "{\"0\":{\"torch.nn.modules.linear.Linear\":{}}}", "{}", [&] {
        w.leaf("torch._C._nn.linear", false);
      });
      if (layer == 0) w.leaf("torch.nn.functional.relu", false, "{}", "{\"inplace\":{\"bool\":false}}");
    }
  };
  for (int step = 1; step <= spec.iterations; ++step) {
    w.set_meta(step, "training");
    w.call("torch.optim.optimizer.Optimizer.zero_grad", true, self, "{\"set_to_none\":{\"bool\":true}}", [&] {
      if (step == spec.skip_zero_grad_reset_at) return;
      for (int p = 0; p < spec.params; ++p)
        if (has_grad[p]) {
          has_grad[p] = false;
          w.var_state(p, data[p], false, 0);
        }
    });
    forward();
    w.call("torch._tensor.Tensor.backward", true, "{}", "{}", [&] {
      for (int p = 0; p < spec.params; ++p) {
        if (detached(step, p)) continue;
        grad[p] = fake_hash(step, p, 2);
        has_grad[p] = true;
        w.var_state(p, data[p], true, grad[p]);
      }
    });
    auto update = [&] {
      for (int p = 0; p < spec.params; ++p) {
        if (detached(step, p)) continue;
        data[p] = fake_hash(step, p, 3);
        w.var_state(p, data[p], true, grad[p]);
      }
    };
    if (step == spec.compiled_step_at) {  // its callees ran as a compiled graph: only the updates are seen
      w.call("torch.optim.adam.Adam.step", true, self, "{}", update, /*compiled=*/true);
    } else {
      w.call("torch.optim.adam.Adam.step", true, self, "{}", [&] {
        w.call("torch.optim.adam.adam", false, "{}", "{\"lr\":{\"float\":0.001},\"foreach\":{\"bool\":true}}", [&] {
          if (step == spec.skip_foreach_add_at) return;
          w.leaf("torch._VariableFunctionsClass._foreach_add_", false, "{}", "{\"alpha\":{\"int\":1}}");
          update();
        });
      });
    }
    if (spec.eval_every > 0 && step % spec.eval_every == 0) {
      w.set_meta(step, "testing");
      forward();
    }
  }
  std::filesystem::create_directories(folder);
  const std::string suffix = std::to_string(spec.process_id) + "_" + std::to_string(spec.thread_id) + ".log";
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream out(std::filesystem::path(folder) / name, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error(folder + "/" + name + ": write failed");
  };
  write("trace_API_" + suffix, w.api_text);
  write("trace_VAR_" + suffix, w.var_);
  return w.api_text.size() + w.var_.size();
}

}  // namespace traincheck
