// traincheck._core side of the record sink (record/record_sink.h): a PyCapsule made by another module
// (traincheck._online) is installed in the recorder. Only the C struct crosses; nothing here knows the
// checker.
#include <nanobind/nanobind.h>

#include "record/record_sink.h"
#include "record/recorder.h"

namespace nb = nanobind;

namespace traincheck {

void bind_record_sink(nb::module_& m) {
  m.def(
      "set_record_sink",
      [](nb::handle capsule) {
        auto* sink = static_cast<const TcRecordSink*>(PyCapsule_GetPointer(capsule.ptr(), TC_RECORD_SINK_CAPSULE));
        if (sink == nullptr) throw nb::python_error();  // not a capsule of that name
        bool ok = false;
        {
          nb::gil_scoped_release release;  // waits for a writer pass using the previous sink
          ok = Recorder::instance().set_sink(sink);
        }
        if (!ok) throw nb::value_error("record sink: version or function table mismatch");
      },
      nb::arg("capsule"),
      "Install the sink in a '" TC_RECORD_SINK_CAPSULE "' capsule: from the next writer pass on it sees every trace line.");
  m.def(
      "clear_record_sink", [] { Recorder::instance().set_sink(nullptr); }, nb::call_guard<nb::gil_scoped_release>(),
      "Remove the record sink without closing it.");
  m.def("has_record_sink", [] { return Recorder::instance().has_sink(); });
}

}  // namespace traincheck
