#include "pack/vet_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/cli_args.h"
#include "common/output_file.h"
#include "pack/version_stamp.h"
#include "pack/vet_report.h"
#include "pack/vetting.h"
#include "relations/registry.h"
#include "trace/json_parse.h"
#include "trace/value.h"

namespace traincheck {

namespace {

namespace fs = std::filesystem;

class VetInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string string_field(const Value& v, const char* field, const std::string& where) {
  const Value* f = v.find(field);
  if (f == nullptr || !f->is_string()) throw VetInputError(where + ": field '" + field + "' missing or not a string");
  return f->as_string();
}

// `with_learned`: each line names the program's own candidates ("learned"); a pack extension needs none.
std::vector<VetProgram> read_programs(const std::string& path, bool with_learned) {
  std::ifstream in(path);
  if (!in) throw VetInputError(path + ": cannot open");
  std::vector<VetProgram> out;
  std::string line, error;
  size_t line_no = 0;
  Value v;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    if (!parse_json(line, v, error)) throw VetInputError(where + ": not valid JSON: " + error);
    VetProgram p;
    p.name = string_field(v, "name", where);
    p.family = string_field(v, "family", where);
    if (with_learned)
      for (const Invariant& inv : read_invariant_file(string_field(v, "learned", where), relation_names()))
        p.learned.insert(inv.identity());
    const std::string checked = string_field(v, "checked", where);
    std::error_code ec;
    if (!fs::is_directory(checked, ec))
      throw VetInputError(where + ": program '" + p.name + "': checked folder '" + checked + "' does not exist");
    p.outcomes = read_check_outcomes(checked);
    p.checked_folder = checked;
    out.push_back(std::move(p));
  }
  if (out.empty()) throw VetInputError(path + ": no program listed");
  return out;
}

// "program 'a' (checked folder F): 22 candidates have no check result; ..." for each program lacking some
// candidate's outcome: its folder holds another candidate set's check, or none.
std::string programs_without_results(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs) {
  std::string out;
  for (const VetProgram& p : programs) {
    size_t lacking = 0;
    for (const Invariant& inv : candidates) lacking += !p.outcomes.count(inv.identity());
    if (lacking == 0) continue;
    out += (out.empty() ? "" : "; ") + std::string("program '") + p.name + "' (checked folder " + p.checked_folder +
           "): " + std::to_string(lacking) + " of " + std::to_string(candidates.size()) + " candidates have no check result";
  }
  return out;
}

// The folder a file is to be written in must exist before anything is written (a pack written and its
// report then refused would leave half an output).
void require_parent_folder(const std::string& file, const char* flag) {
  const fs::path parent = fs::path(file).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw VetInputError(std::string(flag) + " " + file + ": folder " + parent.string() + " does not exist");
}

bool parse_count(const std::string& text, const char* flag, size_t& out, std::ostream& err) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 1) {
      out = static_cast<size_t>(v);
      return true;
    }
  } catch (const std::exception&) {
  }
  err << "traincheck-vet: error: " << flag << " must be a positive integer, got '" << text << "'\n";
  return false;
}

bool parse_share(const std::string& text, double& out, std::ostream& err) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v >= 0.0 && v <= 1.0) {
      out = v;
      return true;
    }
  } catch (const std::exception&) {
  }
  err << "traincheck-vet: error: --max-relation-loo-share must be a number from 0 to 1, got '" << text << "'\n";
  return false;
}

}  // namespace

int run_vet_command(int argc, const char* const* argv, std::ostream& err) {
  ArgParser args("traincheck-vet", "Vet candidate invariants into a pack from per-program check results.");
  args.option({"--candidates"}, "candidates", "the candidate invariants (merged), an invariant file", "", "FILE");
  args.option({"--programs"}, "programs", "JSON lines: name, family, learned (invariant file), checked (folder)", "", "FILE");
  args.option({"-o", "--output"}, "output", "the pack (an invariant file)", "", "FILE");
  args.option({"--report"}, "report", "the vetting report (JSON)", "", "FILE");
  args.option({"--min-programs"}, "min_programs", "programs an invariant must pass on", "3", "N");
  args.option({"--min-families"}, "min_families", "model families among them", "2", "N");
  args.option({"--max-relation-loo-share"}, "max_relation_loo_share",
              "rule (e): ship a hypothesis class (a relation; its hypotheses with argument values apart) only if, vetted without each program in turn, it alarms on at most this share of them",
              "1", "X");
  args.option({"--vetted-on"}, "vetted_on",
              "the library versions the corpus ran on, LIB=VERSION[,...]: invariants about a library's implementation "
              "record them, and runs on other versions do not check them",
              "", "LIBS");
  args.flag({"--stamp-only"}, "stamp_only",
            "no vetting: write the --candidates file with --vetted-on recorded (an existing pack, stamped again)");
  args.flag({"--extend"}, "extend",
            "--candidates is a built pack and --programs lists programs added to the corpus (name, family, checked): "
            "write the pack without what an added program violates");
  std::string error;
  if (!args.parse(argc, argv, error)) {
    err << args.usage() << "traincheck-vet: error: " << error << "\n";
    return 2;
  }
  if (args.help_requested()) {
    err << args.usage();
    return 0;
  }
  const bool stamp_only = args.flag_set("stamp_only");
  for (const char* required : {"candidates", "programs", "output"})
    if (args.get(required).empty() && !(stamp_only && std::string(required) == "programs")) {
      err << args.usage() << "traincheck-vet: error: --" << required << " is required\n";
      return 2;
    }
  LibraryVersions corpus_versions;
  try {
    if (!args.get("vetted_on").empty()) corpus_versions = parse_library_versions_flag(args.get("vetted_on"));
  } catch (const std::invalid_argument& e) {
    err << "traincheck-vet: error: --vetted-on: " << e.what() << "\n";
    return 2;
  }
  try {
    require_parent_folder(args.get("output"), "-o");
    if (!args.get("report").empty()) require_parent_folder(args.get("report"), "--report");
  } catch (const VetInputError& e) {
    err << "traincheck-vet: error: " << e.what() << "\n";
    return 2;
  }
  if (args.flag_set("extend")) {
    try {
      const std::vector<Invariant> pack = read_invariant_file(args.get("candidates"), relation_names());
      const std::vector<VetProgram> added = read_programs(args.get("programs"), false);
      const PackExtension extension = extend_pack(pack, added);
      write_invariant_file(args.get("output"), extension.pack);
      if (!args.get("report").empty()) {
        write_output_file(args.get("report"), extension_report_json(extension, added));
      }
      err << "[vet] " << pack.size() << " invariants on " << added.size() << " added programs: "
          << extension.dropped.size() << " dropped, " << extension.pack.size() << " kept\n";
      for (const auto& [inv, programs] : extension.dropped) {
        err << "[vet]   dropped: " << inv.text_description.str() << " (violated on";
        for (const std::string& name : programs) err << " " << name;
        err << ")\n";
      }
      return 0;
    } catch (const std::exception& e) {
      err << "traincheck-vet: error: " << e.what() << "\n";
      return 1;
    }
  }
  if (stamp_only) {
    if (corpus_versions.empty()) {
      err << "traincheck-vet: error: --stamp-only needs --vetted-on\n";
      return 2;
    }
    try {
      std::vector<Invariant> pack = read_invariant_file(args.get("candidates"), relation_names());
      const size_t stamped = stamp_vetted_versions(pack, corpus_versions);
      write_invariant_file(args.get("output"), pack);
      err << "[vet] " << stamped << " of " << pack.size() << " invariants stamped with the versions they were vetted on\n";
      return 0;
    } catch (const std::exception& e) {
      err << "traincheck-vet: error: " << e.what() << "\n";
      return 1;
    }
  }
  VetRule rule;
  if (!parse_count(args.get("min_programs"), "--min-programs", rule.min_programs, err) ||
      !parse_count(args.get("min_families"), "--min-families", rule.min_families, err))
    return 2;
  if (!parse_share(args.get("max_relation_loo_share"), rule.max_relation_loo_share, err)) return 2;
  try {
    const std::vector<VetProgram> programs = read_programs(args.get("programs"), true);
    // A candidate that none of the listed programs learned is no candidate of this pack (a leave-one-out
    // build lists every program but one and passes the full candidate set).
    std::vector<Invariant> candidates;
    for (Invariant& inv : read_invariant_file(args.get("candidates"), relation_names())) {
      const std::string identity = inv.identity();
      for (const VetProgram& p : programs)
        if (p.learned.count(identity)) {
          candidates.push_back(std::move(inv));
          break;
        }
    }
    const VetResult result = vet(candidates, programs, rule);
    for (const auto& [name, t] : result.by_class)
      if (t.not_checked > 0) {
        err << "traincheck-vet: error: " << t.not_checked << " " << name
            << " candidate(s) have no check result on some program (checked with another candidate file?): "
            << programs_without_results(candidates, programs) << "\n";
        return 1;
      }
    std::vector<Invariant> kept = result.pack();
    stamp_vetted_versions(kept, corpus_versions);
    write_invariant_file(args.get("output"), kept);
    if (!args.get("report").empty()) {
      write_output_file(args.get("report"), vet_report_json(result, programs, rule));
    }
    err << "[vet] " << candidates.size() << " candidates on " << programs.size() << " programs: " << kept.size()
        << " kept\n";
    for (const auto& [name, t] : result.by_class)
      err << "[vet]   " << name << ": " << t.kept << " of " << t.candidates << " kept (device " << t.device_bound << ", step " << t.step_bound << ", violated " << t.violated
          << ", too few programs " << t.too_few_programs << ", one family " << t.one_family
          << "; left out, " << t.loo_programs_alarmed << " of " << programs.size() << " programs alarm"
          << (t.generalises ? "" : ": does not generalise") << ")\n";
    return 0;
  } catch (const std::exception& e) {
    err << "traincheck-vet: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace traincheck
