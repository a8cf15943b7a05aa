#include "infer/infer_command.h"

#include <chrono>
#include <ostream>
#include <set>

#include "common/assert.h"
#include "common/cli_args.h"
#include "common/console_text.h"
#include "infer/engine.h"
#include "relations/registry.h"
#include "trace/trace_store.h"

namespace traincheck {

namespace {

// Relations to run: --enable-relation overrides --disable-relation (as in the original).
bool select_relations(const ArgParser& args, std::vector<const Relation*>& out, std::ostream& err) {
  const auto enabled = args.get_list("enable_relation");
  const auto disabled = args.get_list("disable_relation");
  for (const auto* list : {&enabled, &disabled})
    for (const std::string& n : *list)
      if (!find_relation(n)) {
        err << "error: unknown relation '" << n << "'\n";
        return false;
      }
  std::set<std::string> en(enabled.begin(), enabled.end()), dis(disabled.begin(), disabled.end());
  for (const Relation* r : implemented_relations()) {
    const std::string n(r->name());
    if (!en.empty() ? en.count(n) > 0 : dis.count(n) == 0) out.push_back(r);
  }
  return true;
}

}  // namespace

int run_infer_command(int argc, const char* const* argv, std::ostream& err) {
  ArgParser args("traincheck-infer", "Infer training invariants from traces of known-good runs.");
  args.list({"-t", "--traces"}, "traces", "trace files, combined into one trace", "FILE");
  args.list({"-f", "--trace-folders"}, "trace_folders", "trace folders, each one trace", "DIR");
  args.option({"-o", "--output"}, "output", "invariant file (JSON lines); failed hypotheses go to <output>.failed", "invariants.json", "FILE");
  args.list({"--disable-relation"}, "disable_relation", "relation class names not to infer", "NAME");
  args.list({"--enable-relation"}, "enable_relation", "only infer these relations (overrides --disable-relation)", "NAME");
  args.flag({"--disable-precond-sampling"}, "disable_precond_sampling", "use every example in precondition inference");
  args.option({"--precond-sampling-threshold"}, "precond_sampling_threshold", "examples kept per list when sampling", "10000", "N");
  args.option({"-b", "--backend"}, "backend", "accepted for compatibility; ignored", "pandas", "NAME");
  args.flag({"-d", "--debug"}, "debug", "verbose progress");
  args.option({"-j", "--num-workers", "--threads"}, "threads", "parallel workers (threads; 0: one per core)", "0", "N");
  std::string error;
  if (!args.parse(argc, argv, error)) {
    err << args.usage() << "traincheck-infer: error: " << error << "\n";
    return 2;
  }
  if (args.help_requested()) {
    err << args.usage();
    return 0;
  }
  if (!args.has("traces") && !args.has("trace_folders")) {
    err << args.usage() << "traincheck-infer: error: one of -t/--traces or -f/--trace-folders is required\n";
    return 2;
  }
  InferOptions options;
  try {
    options.precondition.sampling = !args.flag_set("disable_precond_sampling");
    options.precondition.sampling_threshold = std::stoul(args.get("precond_sampling_threshold"));
    options.threads = std::stoul(args.get("threads"));
  } catch (const std::exception&) {
    err << "traincheck-infer: error: --precond-sampling-threshold and -j/--num-workers take a non-negative integer\n";
    return 2;
  }
  options.progress = &err;
  std::vector<const Relation*> relations;
  if (!select_relations(args, relations, err)) return 2;

  const auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<TraceStore> traces;
    ReadOptions read;
    read.warnings = &err;
    read.threads = options.threads;
    if (args.has("traces")) traces.push_back(TraceStore::load_files(args.get_list("traces"), read));
    for (const std::string& folder : args.get_list("trace_folders")) {
      err << "[infer] reading " << console_text(folder) << "\n";
      traces.push_back(TraceStore::load_folder(folder, read));
    }
    std::vector<const TraceStore*> ptrs;
    for (const TraceStore& t : traces) {
      ptrs.push_back(&t);
      err << "[infer] trace " << console_text(t.name()) << ": " << t.records().size() << " records, " << t.calls().size() << " calls, "
          << t.var_instances().size() << " variables\n";
    }
    InferResult result = infer_invariants(ptrs, relations, options);
    const std::string output = args.get("output");
    write_invariant_file(output, result.invariants);
    write_failed_file(output + ".failed", result.failed);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    err << "[infer] " << result.hypotheses << " hypotheses: " << result.invariants.size() << " invariants written to " << output
        << ", " << result.failed.size() << " failed (" << secs << " s)\n";
  } catch (const std::exception& e) {
    err << "traincheck-infer: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace traincheck
