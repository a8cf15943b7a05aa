// A small argparse-like command-line parser shared by the native commands, so that they accept the
// original's flags exactly: short and long names, "--opt=value", and nargs='+' lists.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace traincheck {

class ArgParser {
 public:
  ArgParser(std::string prog, std::string description);

  void flag(const std::vector<std::string>& names, const std::string& dest, const std::string& help);
  void option(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
              const std::string& default_value = "", const std::string& metavar = "VALUE");
  void list(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
            const std::string& metavar = "VALUE");
  // argparse's nargs='?': "--opt VALUE", "--opt=VALUE", or "--opt" alone, which stores `bare_value`.
  void optional_value(const std::vector<std::string>& names, const std::string& dest, const std::string& help,
                      const std::string& default_value, const std::string& bare_value, const std::string& metavar = "VALUE");

  // False with `error` set on a bad command line; `help_requested()` after -h/--help.
  bool parse(int argc, const char* const* argv, std::string& error);
  bool help_requested() const { return help_; }
  std::string usage() const;

  bool flag_set(const std::string& dest) const;
  bool has(const std::string& dest) const;  // given on the command line
  std::string get(const std::string& dest) const;
  std::vector<std::string> get_list(const std::string& dest) const;

 private:
  enum class Kind { Flag, Option, List, OptionalValue };
  struct Spec {
    std::vector<std::string> names;
    std::string dest, help, default_value, metavar;
    Kind kind;
    std::string bare_value = {};  // OptionalValue given without a value
  };
  const Spec* find(const std::string& name) const;

  std::string prog_, description_;
  std::vector<Spec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  bool help_ = false;
};

}  // namespace traincheck
