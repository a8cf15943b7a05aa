#include "infer/infer_command.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "common/assert.h"
#include "common/cli_args.h"
#include "common/console_text.h"
#include "common/output_file.h"
#include "infer/across_programs.h"
#include "infer/engine.h"
#include "pack/vet_report.h"
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

enum class AcrossPrograms { Auto, On, Off };

// The traces grouped by the program they were collected from (across_programs.h), in the order first met.
// A trace of an unknown program is its own group, named by its folder (or trace name), and counted in
// `unknown`.
std::vector<ProgramTraces> group_by_program(const std::vector<TraceStore>& traces, const std::vector<std::string>& folders,
                                            size_t& unknown) {
  std::vector<ProgramTraces> groups;
  std::map<std::string, size_t> index;
  unknown = 0;
  const size_t first_folder = traces.size() - folders.size();  // -t files, when given, are the first trace
  for (size_t i = 0; i < traces.size(); ++i) {
    std::string program = i >= first_folder ? program_of_trace_folder(folders[i - first_folder]) : "";
    if (program.empty()) {
      ++unknown;
      // One folder named twice (`x` and `./x`) is one program, not two that agree by construction.
      std::error_code ec;
      program = i >= first_folder ? std::filesystem::weakly_canonical(folders[i - first_folder], ec).string() : traces[i].name();
      if (ec) program = folders[i - first_folder];
    }
    auto [it, fresh] = index.emplace(program, groups.size());
    if (fresh) groups.push_back({program, {}});
    groups[it->second].traces.push_back(&traces[i]);
  }
  return groups;
}

bool parse_across_programs(const std::string& text, AcrossPrograms& out) {
  if (text == "auto") out = AcrossPrograms::Auto;
  else if (text == "on") out = AcrossPrograms::On;
  else if (text == "off") out = AcrossPrograms::Off;
  else return false;
  return true;
}

size_t count_verdicts(const VetResult& result, size_t ClassTally::*field) {
  size_t n = 0;
  for (const auto& [name, t] : result.by_class) n += t.*field;
  return n;
}

void report_across_programs(const AcrossProgramsResult& r, const std::string& report_path, std::ostream& err) {
  err << "[infer] learned across " << r.programs.size() << " programs: " << r.candidates.size() << " candidates, "
      << count_verdicts(r.vetting, &ClassTally::kept) << " kept; left out: violated on a program "
      << count_verdicts(r.vetting, &ClassTally::violated) << ", passed on fewer than " << r.rule.min_programs
      << " programs " << count_verdicts(r.vetting, &ClassTally::too_few_programs) << ", evidence from a call made once per run "
      << count_verdicts(r.vetting, &ClassTally::seen_once_per_run) << ", fixing the device "
      << count_verdicts(r.vetting, &ClassTally::device_bound) << ", fixing the step number "
      << count_verdicts(r.vetting, &ClassTally::step_bound) << " (each candidate's verdict: " << console_text(report_path)
      << ")\n";
}

// The command line, read and checked.
struct InferCommand {
  bool has_trace_files = false, has_trace_folders = false;  // -t, -f given
  std::vector<std::string> trace_files;                      // -t: one trace
  std::vector<std::string> trace_folders;                    // -f: a trace each
  std::string output;
  std::vector<const Relation*> relations;
  InferOptions options;
  AcrossPrograms across = AcrossPrograms::Auto;
  size_t min_programs = 2;
};

// Reads the flags into `cmd`; an exit code when the command ends here (help, or invalid flags, said on `err`).
std::optional<int> parse_infer_command(int argc, const char* const* argv, std::ostream& err, InferCommand& cmd) {
  ArgParser args("traincheck-infer", "Infer training invariants from traces of known-good runs.");
  args.list({"-t", "--traces"}, "traces", "trace files, combined into one trace", "FILE");
  args.list({"-f", "--trace-folders"}, "trace_folders", "trace folders, each one trace", "DIR");
  args.option({"-o", "--output"}, "output", "invariant file (JSON lines); failed hypotheses go to <output>.failed", "invariants.json", "FILE");
  args.list({"--disable-relation"}, "disable_relation", "relation class names not to infer", "NAME");
  args.list({"--enable-relation"}, "enable_relation", "only infer these relations (overrides --disable-relation)", "NAME");
  args.flag({"--disable-precond-sampling"}, "disable_precond_sampling", "use every example in precondition inference");
  args.option({"--precond-sampling-threshold"}, "precond_sampling_threshold", "examples kept per list when sampling", "10000", "N");
  args.option({"-b", "--backend"}, "backend", "accepted for compatibility; ignored", "pandas", "NAME");
  args.option({"--across-programs"}, "across_programs",
              "learn from several programs as a pack is vetted (docs/analysis.md §Learning across programs): auto (when "
              "the trace folders come from two scripts or more), on, off",
              "auto", "MODE");
  args.option({"--min-programs"}, "min_programs", "across programs: programs an invariant must pass on", "2", "N");
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
  if (!parse_across_programs(args.get("across_programs"), cmd.across)) {
    err << "traincheck-infer: error: --across-programs takes auto, on or off, got '" << console_text(args.get("across_programs")) << "'\n";
    return 2;
  }
  try {
    size_t used = 0;
    const long long m = std::stoll(args.get("min_programs"), &used);
    if (m < 1 || used != args.get("min_programs").size()) throw std::out_of_range("min_programs");
    cmd.min_programs = static_cast<size_t>(m);
    cmd.options.precondition.sampling = !args.flag_set("disable_precond_sampling");
    cmd.options.precondition.sampling_threshold = std::stoul(args.get("precond_sampling_threshold"));
    cmd.options.threads = std::stoul(args.get("threads"));
  } catch (const std::exception&) {
    err << "traincheck-infer: error: --precond-sampling-threshold and -j/--num-workers take a non-negative integer, "
           "--min-programs a positive one\n";
    return 2;
  }
  cmd.options.progress = &err;
  if (!select_relations(args, cmd.relations, err)) return 2;
  cmd.has_trace_files = args.has("traces");
  cmd.has_trace_folders = args.has("trace_folders");
  if (cmd.has_trace_files) cmd.trace_files = args.get_list("traces");
  cmd.trace_folders = args.get_list("trace_folders");
  cmd.output = args.get("output");
  return std::nullopt;
}

// The traces: the -t files as one, then each folder.
std::vector<TraceStore> read_traces(const InferCommand& cmd, std::ostream& err) {
  std::vector<TraceStore> traces;
  ReadOptions read;
  read.warnings = &err;
  read.threads = cmd.options.threads;
  if (cmd.has_trace_files) traces.push_back(TraceStore::load_files(cmd.trace_files, read));
  for (const std::string& folder : cmd.trace_folders) {
    err << "[infer] reading " << console_text(folder) << "\n";
    traces.push_back(TraceStore::load_folder(folder, read));
  }
  for (const TraceStore& t : traces)
    err << "[infer] trace " << console_text(t.name()) << ": " << t.records().size() << " records, " << t.calls().size() << " calls, "
        << t.var_instances().size() << " variables\n";
  return traces;
}

// Whether to learn across programs, said on `err` when auto decides against it; nullopt (the error said)
// when --across-programs on has one program only.
std::optional<bool> decide_across(const InferCommand& cmd, const std::vector<ProgramTraces>& programs, size_t unknown,
                                  std::ostream& err) {
  const bool learn_across =
      cmd.across == AcrossPrograms::On || (cmd.across == AcrossPrograms::Auto && programs.size() >= 2 && unknown == 0);
  if (cmd.across == AcrossPrograms::On && programs.size() < 2) {
    err << "traincheck-infer: error: --across-programs on needs traces of two programs or more; these are all of "
        << console_text(programs.front().name) << "\n";
    return std::nullopt;
  }
  if (cmd.across == AcrossPrograms::Auto && !learn_across && programs.size() >= 2)
    err << "[infer] " << unknown << " trace(s) name no script (their env_dump.txt is missing or names none): the traces "
           "are pooled as runs of one program"
        << (cmd.has_trace_folders ? "; --across-programs on treats each such folder as a program of its own" : "") << "\n";
  if (learn_across && cmd.min_programs > programs.size())
    err << "[infer] warning: --min-programs " << cmd.min_programs << " is more than the " << programs.size()
        << " programs given: no invariant can be kept\n";
  return learn_across;
}

struct InferCounts {
  size_t hypotheses = 0, written = 0, failed = 0;
};

// Learning across programs: the vetting report first (no invariant file without its reasons), then the
// kept invariants and the failed hypotheses.
InferCounts learn_across_programs(const InferCommand& cmd, const std::vector<ProgramTraces>& programs, std::ostream& err) {
  const AcrossProgramsResult result = infer_across_programs(programs, cmd.relations, cmd.options, cmd.min_programs);
  const std::vector<Invariant> kept = result.invariants();
  const std::string report = cmd.output + ".vetting.json";
  write_output_file(report, vet_report_json(result.vetting, result.programs, result.rule));
  write_invariant_file(cmd.output, kept);
  write_failed_file(cmd.output + ".failed", result.failed);
  report_across_programs(result, report, err);
  return {result.hypotheses, kept.size(), result.failed.size()};
}

// Learning from the traces pooled as runs of one program.
InferCounts learn_pooled(const InferCommand& cmd, const std::vector<TraceStore>& traces) {
  std::error_code ignored;  // an earlier run's, about invariants no longer there
  std::filesystem::remove(cmd.output + ".vetting.json", ignored);
  std::vector<const TraceStore*> ptrs;
  for (const TraceStore& t : traces) ptrs.push_back(&t);
  InferResult result = infer_invariants(ptrs, cmd.relations, cmd.options);
  write_invariant_file(cmd.output, result.invariants);
  write_failed_file(cmd.output + ".failed", result.failed);
  return {result.hypotheses, result.invariants.size(), result.failed.size()};
}

}  // namespace

int run_infer_command(int argc, const char* const* argv, std::ostream& err) {
  InferCommand cmd;
  if (const std::optional<int> exit_code = parse_infer_command(argc, argv, err, cmd)) return *exit_code;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const std::vector<TraceStore> traces = read_traces(cmd, err);
    size_t unknown = 0;
    const std::vector<ProgramTraces> programs = group_by_program(traces, cmd.trace_folders, unknown);
    const std::optional<bool> learn_across = decide_across(cmd, programs, unknown, err);
    if (!learn_across) return 2;
    const InferCounts counts = *learn_across ? learn_across_programs(cmd, programs, err) : learn_pooled(cmd, traces);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    err << "[infer] " << counts.hypotheses << " hypotheses: " << counts.written << " invariants written to " << cmd.output
        << ", " << counts.failed << " failed (" << secs << " s)\n";
  } catch (const std::exception& e) {
    err << "traincheck-infer: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace traincheck
