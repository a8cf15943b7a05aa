// traincheck._core: the one native module loaded into the training process. Thin: each area binds its
// functions in its own bind_* file; no logic lives here.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace traincheck {
void bind_recorder(nb::module_& m);
void bind_record_sink(nb::module_& m);
void bind_tracker(nb::module_& m);
}

NB_MODULE(_core, m) {
  m.doc() = "TrainCheck C++ engine: recorder (call wrappers, event streams, trace writer)";
  traincheck::bind_recorder(m);
  traincheck::bind_record_sink(m);
  traincheck::bind_tracker(m);
  // Objects the tool keeps for the whole run (the tracker's TrackedParams) are still alive when the
  // interpreter exits, by design; nanobind's leak report at teardown would print into the script's stderr.
  nb::set_leak_warnings(false);
}
