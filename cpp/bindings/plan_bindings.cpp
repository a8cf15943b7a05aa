// traincheck._online.selective_plan: the selective plan (relations/selective_plan.h) for collect, which only
// installs it. Part of _online because it is analyzer code (the invariant codec and the relations), which
// _core, the module loaded into training, never links.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "relations/selective_plan.h"
#include "invariant/invariant.h"

namespace nb = nanobind;

namespace traincheck {

void bind_selective_plan(nb::module_& m) {
  m.def(
      "selective_plan",
      [](const std::vector<std::string>& invariant_files) {
        try {
          return instr_opts_json(build_selective_plan(invariant_files));
        } catch (const InvariantFormatError& e) {
          throw nb::value_error(e.what());
        }
      },
      nb::arg("invariant_files"),
      "instr_opts.json (compact JSON, model_tracker_style null) for the invariants of these files; "
      "ValueError naming file, line and field for a malformed invariant.");
}

}  // namespace traincheck
