#include "common/cli_args.h"

namespace traincheck {

namespace {

// A token that starts another option ("-x", "--x"), not a value; "-" alone and "-3" are values.
bool looks_like_option(const char* token) {
  return token[0] == '-' && token[1] != '\0' && !(token[1] >= '0' && token[1] <= '9');
}

}  // namespace

ArgParser::ArgParser(std::string prog, std::string description) : prog_(std::move(prog)), description_(std::move(description)) {}

void ArgParser::flag(const std::vector<std::string>& names, const std::string& dest, const std::string& help) {
  specs_.push_back({names, dest, help, "", "", Kind::Flag});
}
void ArgParser::option(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
                       const std::string& default_value, const std::string& metavar) {
  specs_.push_back({names, dest, help, default_value, metavar, Kind::Option});
}
void ArgParser::list(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
                     const std::string& metavar) {
  specs_.push_back({names, dest, help, "", metavar, Kind::List});
}

void ArgParser::optional_value(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
                               const std::string& default_value, const std::string& bare_value, const std::string& metavar) {
  specs_.push_back({names, dest, help, default_value, metavar, Kind::OptionalValue, bare_value});
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const {
  for (const Spec& s : specs_)
    for (const std::string& n : s.names)
      if (n == name) return &s;
  return nullptr;
}

bool ArgParser::parse(int argc, const char* const* argv, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      return true;
    }
    std::string inline_value;
    bool has_inline = false;
    if (arg.starts_with("--")) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    const Spec* spec = find(arg);
    // "-j4": a short option with its value attached, as argparse accepts.
    if (spec == nullptr && !arg.starts_with("--") && arg.size() > 2 && arg[0] == '-') {
      const Spec* short_spec = find(arg.substr(0, 2));
      if (short_spec != nullptr && (short_spec->kind == Kind::Option || short_spec->kind == Kind::OptionalValue)) {
        spec = short_spec;
        inline_value = arg.substr(2);
        arg = arg.substr(0, 2);
        has_inline = true;
      }
    }
    if (spec == nullptr) {
      error = "unrecognized argument: " + arg;
      return false;
    }
    std::vector<std::string>& slot = values_[spec->dest];
    if (spec->kind == Kind::Flag) {
      if (has_inline) {
        error = "argument " + arg + ": ignored explicit argument '" + inline_value + "'";
        return false;
      }
      slot = {"1"};
      continue;
    }
    std::vector<std::string> got;
    if (has_inline) got.push_back(inline_value);
    if (spec->kind == Kind::Option && !has_inline) {
      if (i + 1 >= argc) {
        error = "argument " + arg + ": expected one argument";
        return false;
      }
      got.push_back(argv[++i]);
    } else if (spec->kind == Kind::OptionalValue && !has_inline) {
      if (i + 1 < argc && !looks_like_option(argv[i + 1])) got.push_back(argv[++i]);
      else got.push_back(spec->bare_value);
    } else if (spec->kind == Kind::List) {
      while (i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] != '\0')) got.push_back(argv[++i]);
      if (got.empty()) {
        error = "argument " + arg + ": expected at least one argument";
        return false;
      }
    }
    slot = got;  // like argparse: a repeated option replaces the earlier value
  }
  return true;
}

bool ArgParser::flag_set(const std::string& dest) const { return values_.count(dest) > 0; }
bool ArgParser::has(const std::string& dest) const { return values_.count(dest) > 0; }

std::string ArgParser::get(const std::string& dest) const {
  auto it = values_.find(dest);
  if (it != values_.end() && !it->second.empty()) return it->second.front();
  for (const Spec& s : specs_)
    if (s.dest == dest) return s.default_value;
  return "";
}

std::vector<std::string> ArgParser::get_list(const std::string& dest) const {
  auto it = values_.find(dest);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string ArgParser::usage() const {
  std::string u = "usage: " + prog_ + " [options]\n\n" + description_ + "\n\noptions:\n  -h, --help\n";
  for (const Spec& s : specs_) {
    std::string names;
    for (const std::string& n : s.names) names += (names.empty() ? "" : ", ") + n;
    if (s.kind == Kind::Option) names += " " + s.metavar;
    if (s.kind == Kind::OptionalValue) names += " [" + s.metavar + "]";
    if (s.kind == Kind::List) names += " " + s.metavar + " [" + s.metavar + " ...]";
    std::string defaults = s.default_value.empty() ? "" : " (default: " + s.default_value + ")";
    if (s.kind == Kind::OptionalValue) defaults = " (default: " + s.default_value + "; alone: " + s.bare_value + ")";
    u += "  " + names + "\n        " + s.help + defaults + "\n";
  }
  return u;
}

}  // namespace traincheck
