// traincheck._online: the in-process online checker (check/online/online_session.h), a module of its own so
// that the analyzer's code is loaded into training only when collect checks while it runs. It makes a
// session and hands the recorder its sink as a PyCapsule (record/record_sink.h); `_core` installs it.
//
// The session is never freed: the recorder may call the sink until the process ends (interpreter
// teardown included), so its context must outlive every module object.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <thread>

#include "bindings/python_peer_store.h"
#include "check/online/online_session.h"
#include "check/online/process_summaries.h"

namespace nb = nanobind;

namespace traincheck {
namespace {

OnlineSession* g_session = nullptr;
TcRecordSink g_sink{};  // what the capsule points to; the recorder copies it

OnlineSession& session() {
  if (g_session == nullptr) throw nb::value_error("traincheck._online: start() was not called");
  return *g_session;
}

nb::dict to_dict(const OnlineCounts& c) {
  nb::dict d;
  d["violations"] = c.violations;
  d["invariants_violated"] = c.invariants_violated;
  d["triggered"] = c.triggered;
  d["checked"] = c.checked;
  d["not_checked"] = c.not_checked;
  d["records"] = c.records;
  d["dispatched"] = c.dispatched;
  d["bad_lines"] = c.bad_lines;
  d["write_errors"] = c.write_errors;
  return d;
}

}  // namespace

void bind_selective_plan(nb::module_& m);

}  // namespace traincheck

NB_MODULE(_online, m) {
  using namespace traincheck;
  m.doc() = "TrainCheck in-process online checker (fed by the recorder's writer thread)";
  m.def(
      "start",
      [](const std::vector<std::string>& invariant_files, const std::string& signatures_json, const std::string& output_dir,
         double report_interval_s, const std::string& on_violation, const std::string& library_versions_json) {
        if (g_session != nullptr) throw nb::value_error("traincheck._online: already started in this process");
        const std::optional<ViolationAction> action = violation_action_from_name(on_violation);
        if (!action) throw nb::value_error(("on_violation must be log, warn or raise, not '" + on_violation + "'").c_str());
        OnlineSessionOptions o{invariant_files, signatures_json, output_dir, report_interval_s};
        o.on_violation = *action;
        try {
          if (!library_versions_json.empty()) o.library_versions = library_versions_from_json(library_versions_json);
          g_session = new OnlineSession(std::move(o));
        } catch (const std::exception& e) {
          throw nb::value_error(e.what());
        }
        g_sink = g_session->sink();
        PyObject* capsule = PyCapsule_New(&g_sink, TC_RECORD_SINK_CAPSULE, nullptr);
        if (capsule == nullptr) throw nb::python_error();
        return nb::steal(capsule);
      },
      nb::arg("invariant_files"), nb::arg("signatures_json"), nb::arg("output_dir"), nb::arg("report_interval_s") = 10.0,
      nb::arg("on_violation") = "warn", nb::arg("library_versions_json") = "",
      "Load the invariants, open <output_dir>/failed.log and return the record sink capsule for _core.set_record_sink. "
      "on_violation: 'warn' and 'raise' print each invariant's first violation on stderr as it is found. "
      "library_versions_json: {name: version} of the libraries the process runs; invariants vetted on other "
      "versions are not checked.");
  m.def(
      "take_alerts",
      [] {
        nb::list out;
        if (g_session == nullptr || !g_session->alerts_waiting()) return out;  // the per-step fast path
        for (const ViolationAlert& a : g_session->take_alerts()) {
          nb::dict d;
          d["label"] = a.label;
          d["relation"] = a.relation;
          d["description"] = a.description;
          d["step"] = a.step ? nb::cast(*a.step) : nb::none();
          d["stage"] = a.stage.empty() ? nb::none() : nb::cast(a.stage);
          d["held_on_programs"] = a.held_on_programs ? nb::cast(*a.held_on_programs) : nb::none();
          d["examples"] = a.examples ? nb::cast(*a.examples) : nb::none();
          out.append(std::move(d));
        }
        return out;
      },
      "The first violations of invariants found since the last call (dicts: label, relation, description, step, "
      "stage, held_on_programs, examples), oldest first; [] at once when there are none.");
  m.def(
      "add_signatures",
      [](const std::string& signatures_json) {
        ApiSignatures more;
        try {
          more = parse_signatures_json(signatures_json);
        } catch (const std::exception& e) {
          throw nb::value_error(e.what());
        }
        // Never blocks on the session's lock with the GIL held (the lock's holder may be waiting for the
        // store's I/O thread, which needs the GIL); the GIL is held while merging (on_fork_child).
        while (!session().try_add_signatures(more)) {
          nb::gil_scoped_release release;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      },
      nb::arg("signatures_json"),
      "Signatures of APIs wrapped after start (modules imported later), as api_signatures.json entries.");
  m.def(
      "counts",
      [] {
        OnlineCounts c;
        {
          nb::gil_scoped_release release;  // as in cross_rank_stats
          c = session().counts();
        }
        return to_dict(c);
      },
      "Counts so far (violations, triggered, checked, ...).");
  m.def(
      "finish", [] { session().finish(); }, nb::call_guard<nb::gil_scoped_release>(),
      "End this process's checking now: judge what only the end of the trace decides, write report.html and "
      "summary_<pid>.json (the recorder does it at shutdown; idempotent).");
  m.def(
      "enable_cross_rank",
      [](nb::object resolve, int peers, int64_t keep_steps, int local_rank, int local_world_size, int node) {
        // traincheck.settings validates the environment; this guards any other caller (keep_steps 0
        // turned the exchange off silently, -1 crashed on an empty deque).
        if (peers < 0) throw nb::value_error("peers must be 0 (every other rank) or more");
        if (keep_steps < 1) throw nb::value_error("keep_steps must be 1 or more");
        CrossRankOptions o;
        o.peers = peers;
        o.keep_steps = keep_steps;
        o.local_rank = local_rank;
        o.local_world = local_world_size;
        o.node = node;
        return session().enable_cross_rank(std::make_unique<PythonPeerStore>(std::move(resolve)), o);
      },
      nb::arg("resolve"), nb::arg("peers") = 0, nb::arg("keep_steps") = 8, nb::arg("local_rank") = -1,
      nb::arg("local_world_size") = 0, nb::arg("node") = -1,
      "Check cross-rank invariants in-process through the job's store: `resolve()` returns None until "
      "torch.distributed is set up, then (store, rank, world_size). local_rank, local_world_size, node: the "
      "launcher's node shape (-1, 0: unknown), from which the ranks compared are chosen. False when no "
      "invariant compares ranks.");
  m.def("cross_rank_stats", []() -> nb::object {
    std::optional<CrossRankStats> st;
    {
      nb::gil_scoped_release release;  // the session's lock may be held by one waiting for the store's thread
      st = session().cross_rank_stats();
    }
    if (!st) return nb::none();
    nb::dict d;
    d["rank"] = st->group ? nb::cast(st->group->rank) : nb::none();
    d["world_size"] = st->group ? nb::cast(st->group->world_size) : nb::none();
    d["mode"] = st->mode;
    d["node"] = st->node;
    d["leader"] = st->leader;
    d["peers"] = nb::cast(st->peers);
    d["job_store_calls"] = st->job_store_calls;
    d["job_store_bytes"] = st->job_store_bytes;
    d["folds_published"] = st->folds.folds_published;
    d["folds_matched"] = st->folds.folds_matched;
    d["folds_differing"] = st->folds.folds_differing;
    d["references_missing"] = st->folds.references_missing;
    d["steps_published"] = st->steps_published;
    d["bytes_published"] = st->bytes_published;
    d["summaries_received"] = st->summaries_received;
    d["summaries_matched"] = st->summaries_matched;
    d["records_received"] = st->records_received;
    d["store_ops"] = st->store_ops;
    d["store_errors"] = st->store_errors;
    d["steps_skipped"] = st->steps_skipped;
    d["io_cpu_ns"] = st->io_cpu_ns;
    d["lagging"] = nb::cast(std::vector<int>(st->lagging.begin(), st->lagging.end()));
    d["last_error"] = st->last_error;
    return d;
  });
  m.def("errors", [] { return std::make_pair(session().errors(), session().last_error()); });
  m.def("report_path", [] { return session().report_path(); });
  m.def(
      "run_online_check_report",
      [](const std::string& folder, size_t max_rows, std::optional<int> exit_code) -> std::optional<std::pair<std::string, std::string>> {
        RunOnlineCheckReport report = run_online_check_report(folder, max_rows, exit_code);
        if (!report.checked) return std::nullopt;
        return std::make_pair(std::move(report.line), std::move(report.table));
      },
      nb::arg("folder"), nb::arg("max_rows") = 20, nb::arg("exit_code") = nb::none(),
      "The in-process check of a run, from its online_check folder: (the totals line over every process's "
      "summary_<pid>.json, the violation table or ''); None when the folder does not exist. `exit_code`, the "
      "program's, says why a run left no summary.");
  bind_selective_plan(m);
}
