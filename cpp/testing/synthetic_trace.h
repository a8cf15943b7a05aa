// Synthetic trace folders in the collector's format, for tests and benchmarks: an MLP-like training
// loop (zero_grad, two Linear.forward with linear/relu inside, backward, Adam.step calling adam and
// _foreach_add_), parameter state records around them, and an occasional testing stage.
#pragma once

#include <cstdint>
#include <string>

namespace traincheck {

struct SyntheticTraceSpec {
  int iterations = 10;
  int params = 4;                  // tracked parameters (state records per change)
  int eval_every = 5;              // a testing-stage forward after every Nth step; 0: never
  int skip_foreach_add_at = -1;    // bug injection: Adam.step at this step does not call _foreach_add_
  int compiled_step_at = -1;       // Adam.step at this step runs under torch.compile: "compiled", callees unrecorded
  int skip_zero_grad_reset_at = -1;  // bug injection: zero_grad at this step leaves grads unchanged
  int detach_first_param_from = -1;  // bug injection: from this step on, parameter 0 gets no gradient
                                     // and Adam.step leaves it unchanged (a detached layer)
  bool legacy_prefix = false;      // write "_ML_DAIKON_" instead of "_TRAINCHECK_"
  int64_t process_id = 4242;
  int64_t thread_id = 140000000000001;
  int64_t start_time = 1000000;
};

// Writes trace_API_<pid>_<tid>.log and trace_VAR_<pid>_<tid>.log into `folder` (created). Returns the
// number of bytes written.
uint64_t write_synthetic_trace(const std::string& folder, const SyntheticTraceSpec& spec);

}  // namespace traincheck
