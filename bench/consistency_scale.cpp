// In-process Consistency checking at model scale (bench/consistency_scale.py drives it; bench/README.md).
//
// One process's writer-thread work per training step, as the record sink does it: the step's parameter
// state lines go through OnlineChecker::add_lines and end_batch (one writer pass per step), and, with
// --ranks R > 1, this rank's side of the cross-rank exchange (each variable's last record kept, the ended
// step's summary formatted) and the other ranks' step ends through check_peer_step_end (parsed here with
// one parser kept for the run, as the cross-rank exchange parses them on the writer thread). Prints one JSON line:
// thread CPU per step (the first step, which only starts the parameters' histories, left out).
//
// Only APIs the code before the grouping change already had, so the same file links against a baseline
// build's libraries (consistency_scale.py --baseline-libs).
//
//   consistency_scale --params N --invariants I [--ranks R] [--steps S] [--shapes K] [--distinct-shapes 1]
//                     [--by-name 1] [--alone 0] [--steady-from STEP]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "check/online/cross_rank_exchange.h"
#include "check/online/online_checker.h"
#include "invariant/invariant.h"
#include "relations/ddp_invariant.h"
#include "testing/memory_peer_store.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

// Properties every record has: `exist` clauses on them hold everywhere.
constexpr const char* kPresent[] = {"thread_id", "attributes.dtype", "attributes.requires_grad", "meta_vars.stage",
                                    "attributes.ndim", "attributes.nbytes", "meta_vars.step"};

// The original's DDP invariant (tests/cpp/relations/ddp_invariant.h) with one more clause, a stage
// constant that every record meets, listing a value of its own: `count` invariants that differ in
// identity and cost the same. They differ only in the constant's values, so the checker indexes their
// step ends once (PairCondition::shape). `distinct_shapes`: each also gets `exist` clauses on the
// properties of its index's bits (all present, so the verdicts are the same), which gives every
// invariant a precondition shape of its own: the case where nothing is shared. `by_name`: each also
// pairs only parameters of one name ("consistent var_name"), as the invariant our inference learns from
// DDP runs does (tests/cpp/data/relation_cases/consistency/ranks_learned): replicas of one parameter,
// not every same-shaped pair, so a run in sync has no violation.
std::vector<Invariant> invariants(int count, bool distinct_shapes, bool by_name) {
  const std::string real = test_data::kDdpConsistencyInvariant;
  const std::string before = R"({"type": "consistent", "prop_name": "attributes.ndim")";
  std::vector<Invariant> out;
  for (int i = 0; i < count; ++i) {
    std::string clauses = R"({"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", )"
                          R"("prop_dtype": "str", "values": ["training", "x)" + std::to_string(i) + R"("]}, )";
    for (size_t bit = 0; distinct_shapes && bit < std::size(kPresent); ++bit)
      if (i & (1 << bit))
        clauses += std::string(R"({"type": "exist", "prop_name": ")") + kPresent[bit] +
                   R"(", "additional_path": "None", "prop_dtype": "int"}, )";
    if (by_name) clauses += R"({"type": "consistent", "prop_name": "var_name", "additional_path": "None", "prop_dtype": "str"}, )";
    std::string text = real;
    text.insert(text.find(before), clauses);
    out.push_back(invariant_from_json(text));
  }
  return out;
}

// One rank's state lines of one step, as the collector writes a parameter's sampled state
// (record/event_formatter.cpp: every tensor attribute, about 600 bytes): `shapes` distinct sizes (a
// model's layers repeat a few shapes: the precondition's groups are large), replicas in sync. The data
// addresses differ by rank, as real ones do.
std::string step_lines(int rank, int step, int params, int shapes) {
  std::string out;
  out.reserve(static_cast<size_t>(params) * 640);
  for (int p = 0; p < params; ++p) {
    const int rows = 1 + p % shapes;
    out += "{\"var_name\":\"model.";
    out += std::to_string(p);
    out += ".weight\",\"var_type\":\"torch.nn.Parameter\",\"mode\":\"sample\",\"dump_loc\":\"step_end\",\"process_id\":";
    out += std::to_string(100 + rank);
    out += ",\"thread_id\":140356213267328,\"meta_vars\":{\"step\":";
    out += std::to_string(step);
    out += ",\"_DATA_PARALLEL_RANK\":";
    out += std::to_string(rank);
    out += ",\"stage\":\"training\"},\"type\":\"state_change\",\"attributes\":{\"_TRAINCHECK_data_ID\":";
    out += std::to_string(2064510624136512LL + 1000000LL * rank + 4096LL * p);
    out += ",\"data\":";
    out += std::to_string(1000003LL * (p + 1) + 7919LL * step);
    out += ",\"dtype\":\"torch.float32\",\"grad\":null,\"grad_fn\":null,\"is_cpu\":true,\"is_cuda\":false,\"is_leaf\":true,"
           "\"is_meta\":false,\"is_quantized\":false,\"is_sparse\":false,\"itemsize\":4,\"name\":null,\"nbytes\":";
    out += std::to_string(16 * rows);
    out += ",\"ndim\":2,\"requires_grad\":true,\"retains_grad\":false,\"shape\":[";
    out += std::to_string(rows);
    out += ",4]},\"time\":";
    out += std::to_string(5487591657391LL + step * 1000000LL + p);
    out += "}\n";
  }
  return out;
}

// A process alone (no peers: one rank, no cross-rank exchange) idles the checks that only pair records
// of two processes, as the in-process session does at its first lines. A baseline build without
// OnlineChecker::assume_one_process checks as if peers could come.
template <typename Checker>
bool idle_if_alone(Checker& checker, bool alone) {
  if constexpr (requires { checker.assume_one_process(); }) {
    if (alone) checker.assume_one_process();
    return alone;
  }
  return false;
}

// A peer's summary of a step, as its exchange publishes it: binary record frames, or JSON lines in a
// build before them (a baseline's).
template <typename Exchange>
std::string published_summary(const Exchange& exchange, const std::vector<Record>& records) {
  if constexpr (requires { exchange.summary_of(records); }) {
    return exchange.summary_of(records);
  } else {
    std::string text;
    for (const Record& r : records) text += exchange.summary_line(r);
    return text;
  }
}

// Its records, read back as this rank's exchange reads them (one parser kept for the run in a build
// with JSON lines: its string caches then hold the model's names from the second step on).
template <typename Exchange>
bool read_back(Exchange& exchange, JsonParser& parser, const std::string& summary, std::vector<Record>& out) {
  std::string error;
  if constexpr (requires { exchange.read_summary(summary, out, error); }) {
    if (exchange.read_summary(summary, out, error)) return true;
  } else {
    std::string padded;
    size_t pos = 0;
    bool read = true;
    while (read && pos < summary.size()) {
      const size_t eol = summary.find('\n', pos);
      padded.assign(summary, pos, eol - pos);
      pos = eol + 1;
      const size_t len = padded.size();
      padded.append(kJsonPadding, '\0');
      Record r;
      read = parse_trace_line(parser, padded.data(), len, r, error);
      if (read) out.push_back(std::move(r));
    }
    if (read) return true;
  }
  std::fprintf(stderr, "bad peer summary: %s\n", error.c_str());
  return false;
}

// Whether this build's checker judges a peer's step that has this rank's digest without its records
// (cross_rank_exchange.h, step_digest.h), and so its exchange skips fetching it. A baseline build without
// digests reads every peer's summary.
template <typename Checker>
bool judges_by_digest(const Checker& checker) {
  if constexpr (requires { checker.peer_steps_by_digest(); }) return checker.peer_steps_by_digest();
  return false;
}

template <typename Options>
void set_match_by_digest(Options& options, bool on) {
  if constexpr (requires { options.match_by_digest; }) options.match_by_digest = on;
}

// The two ranks' digests of a step are equal (untimed: the peer computes its own, and this rank's I/O
// thread compares them).
template <typename Exchange>
bool digests_equal(const Exchange& exchange, const std::vector<Record>& own, const std::vector<Record>& peer) {
  if constexpr (requires { exchange.digest_of(own); }) return exchange.digest_of(own) == exchange.digest_of(peer);
  return false;
}

// What the writer thread does with a matched step: tells the checker (timed).
template <typename Checker>
void step_matched(Checker& checker, int64_t step, int64_t process_id) {
  if constexpr (requires { checker.peer_step_matched(step, process_id); }) checker.peer_step_matched(step, process_id);
}

// This process's resident memory (VmRSS), MiB.
double rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int params = arg(argc, argv, "--params", 1000);
  const int count = arg(argc, argv, "--invariants", 1);
  const int ranks = arg(argc, argv, "--ranks", 1);
  const int steps = arg(argc, argv, "--steps", 4);
  const int shapes = arg(argc, argv, "--shapes", 8);
  const bool distinct_shapes = arg(argc, argv, "--distinct-shapes", 0) != 0;
  const bool by_name = arg(argc, argv, "--by-name", 0) != 0;
  // --alone 0 on one rank: the own records' cost a rank of a multi-rank job pays, without its peers'.
  const bool alone = ranks == 1 && arg(argc, argv, "--alone", 1) != 0;
  const std::string dir = (std::filesystem::temp_directory_path() / ("tc_consistency_scale_" + std::to_string(getpid()))).string();
  uint64_t checked_ns = 0, peer_ns = 0, violations = 0;
  // Steps past the Consistency check's kept window (16 steps: ConsistencyOnlineCheck::kKeptSteps), when
  // it frees as much as it keeps each step and the heap has stopped growing: what a long run pays per
  // step. The steps before also fault in the window's pages, once per run.
  const int steady_from = arg(argc, argv, "--steady-from", 18);
  uint64_t steady_ns = 0;
  int steady_steps = 0;
  double rss_before = 0, rss_after = 0;  // around the checked steps: what the checker holds (and the heap keeps)
  bool peer_steps_matched = false;  // some peer step was judged by digest
  bool idled = false;
  {
    OnlineCheckerOptions options;
    options.output_dir = dir;
    OnlineChecker checker(invariants(count, distinct_shapes, by_name), ApiSignatures{}, options);
    idled = idle_if_alone(checker, alone);
    // With peers, this rank's side of the cross-rank exchange runs as in the session: it keeps each
    // variable's last record of the step (the checker's peer state observer) and, once the step has
    // ended, turns them into the step's summary for the store (an in-memory one here; its I/O thread's
    // CPU is not counted, as it is not the writer's).
    std::unique_ptr<CrossRankExchange> exchange;
    const bool by_digest = judges_by_digest(checker);
    if (ranks > 1) {
      CrossRankOptions cross_rank;
      set_match_by_digest(cross_rank, by_digest);
      exchange = std::make_unique<CrossRankExchange>(
          std::make_unique<testing::MemoryPeerStore>(std::make_shared<testing::MemoryStoreData>(), PeerGroup{0, ranks}),
          cross_rank, checker.peer_fields());
      checker.set_peer_state_observer([&exchange](const Record& r) { exchange->observe(r); });
    }
    // Peers' summaries as their exchanges publish them (made untimed: their cost is the peers'), read
    // back and checked as this rank's exchange and checker do (timed).
    JsonParser peer_parser;
    // Every step's input is made before the first is checked: the peers' work is theirs, in other
    // processes, and made here between steps it would leave this thread's caches and heap as the
    // writer thread never finds them.
    struct StepInput {
      std::string own;
      std::vector<std::string> peers;
      std::vector<bool> matched;
    };
    std::vector<StepInput> inputs(static_cast<size_t>(steps));
    for (int step = 0; step < steps; ++step) {
      StepInput& in = inputs[static_cast<size_t>(step)];
      in.own = step_lines(0, step, params, shapes);
      const std::string& own = in.own;
      std::vector<std::string>& peers = in.peers;
      std::vector<bool>& matched = in.matched;
      if (exchange) {
        const std::vector<Record> own_records = by_digest ? read_trace_text("own", own).records : std::vector<Record>{};
        for (int r = 1; r < ranks; ++r) {
          const std::vector<Record> records = read_trace_text("peer", step_lines(r, step, params, shapes)).records;
          peers.push_back(published_summary(*exchange, records));
          matched.push_back(by_digest && digests_equal(*exchange, own_records, records));
        }
      }
    }
    rss_before = rss_mib();
    for (int step = 0; step < steps; ++step) {
      const std::string& own = inputs[static_cast<size_t>(step)].own;
      const std::vector<std::string>& peers = inputs[static_cast<size_t>(step)].peers;
      const std::vector<bool>& matched = inputs[static_cast<size_t>(step)].matched;
      const uint64_t t0 = thread_cpu_ns();
      checker.add_lines("trace_VAR_100_7.log", own);
      checker.end_batch();
      if (exchange) exchange->exchange(checker.current_step());
      const uint64_t t1 = thread_cpu_ns();
      for (size_t p = 0; p < peers.size(); ++p) {
        if (matched[p]) {  // not fetched, not read: the checker is told
          step_matched(checker, step, 101 + static_cast<int64_t>(p));
          peer_steps_matched = true;
          continue;
        }
        std::vector<Record> records;
        if (!read_back(*exchange, peer_parser, peers[p], records)) return 1;
        for (const Record& r : records) checker.check_peer_step_end(r);
      }
      const uint64_t t2 = thread_cpu_ns();
      // The training's step, during which the exchange's I/O thread publishes this one (its CPU is not
      // the writer's) and hands the buffer back: 1.4 s at 50k parameters (bench/README.md), a fraction
      // of it here.
      if (exchange) std::this_thread::sleep_for(std::chrono::milliseconds(params / 250));
      if (step > 0) {
        checked_ns += t1 - t0;
        peer_ns += t2 - t1;
      }
      if (step >= steady_from) {
        steady_ns += t2 - t0;
        ++steady_steps;
      }
    }
    violations = checker.counts().violations;
    rss_after = rss_mib();
  }
  std::filesystem::remove_all(dir);
  const double per_step = 1e-6 / std::max(1, steps - 1);
  std::string steady = "null";  // too few steps to reach it
  if (steady_steps > 0) steady = std::to_string(1e-6 * static_cast<double>(steady_ns) / steady_steps);
  std::printf("{\"params\": %d, \"invariants\": %d, \"ranks\": %d, \"own_ms_per_step\": %.3f, \"peer_ms_per_step\": %.3f, "
              "\"steady_ms_per_step\": %s, \"violations\": %llu, \"alone\": %s, \"peer_steps_by_digest\": %s, "
              "\"checker_rss_mib\": %.0f}\n",
              params, count, ranks, checked_ns * per_step, peer_ns * per_step, steady.c_str(),
              static_cast<unsigned long long>(violations), idled ? "true" : "false", peer_steps_matched ? "true" : "false",
              rss_after - rss_before);
  return 0;
}
