// The shared command-line parser: the original's spellings next to ours (-j/--num-workers beside
// --threads, --exit-on-idle beside --exit-when-idle), argparse's "-j4" and nargs='?' options.
#include "common/cli_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using traincheck::ArgParser;

namespace {

bool parse(ArgParser& p, std::vector<const char*> argv, std::string& error) {
  argv.insert(argv.begin(), "prog");
  return p.parse(static_cast<int>(argv.size()), argv.data(), error);
}

ArgParser workers_and_idle() {
  ArgParser p("prog", "test");
  p.option({"-j", "--num-workers", "--threads"}, "threads", "workers", "0", "N");
  p.optional_value({"--exit-on-idle", "--exit-when-idle"}, "idle", "idle seconds", "0", "60", "SECONDS");
  p.flag({"-v", "--verbose"}, "verbose", "verbose");
  p.list({"-f"}, "folders", "folders");
  return p;
}

}  // namespace

TEST(CliArgs, EverySpellingOfAnOptionFillsTheSameValue) {
  for (std::vector<const char*> argv : std::vector<std::vector<const char*>>{
           {"-j", "3"}, {"-j3"}, {"--num-workers", "3"}, {"--num-workers=3"}, {"--threads", "3"}}) {
    ArgParser p = workers_and_idle();
    std::string error;
    ASSERT_TRUE(parse(p, argv, error)) << error;
    EXPECT_EQ(p.get("threads"), "3") << argv[0];
  }
  ArgParser p = workers_and_idle();
  std::string error;
  ASSERT_TRUE(parse(p, {}, error));
  EXPECT_EQ(p.get("threads"), "0");  // the default
}

TEST(CliArgs, AnOptionalValueAloneTakesItsBareValue) {
  struct Case {
    std::vector<const char*> argv;
    std::string idle;
  };
  for (const Case& c : std::vector<Case>{{{}, "0"},
                                         {{"--exit-on-idle"}, "60"},
                                         {{"--exit-on-idle", "-v"}, "60"},
                                         {{"--exit-on-idle", "5"}, "5"},
                                         {{"--exit-on-idle=2.5"}, "2.5"},
                                         {{"--exit-when-idle", "1"}, "1"},
                                         {{"--exit-on-idle", "-f", "a"}, "60"}}) {
    ArgParser p = workers_and_idle();
    std::string error;
    ASSERT_TRUE(parse(p, c.argv, error)) << error;
    EXPECT_EQ(p.get("idle"), c.idle) << (c.argv.empty() ? "(none)" : c.argv[0]);
  }
  ArgParser p = workers_and_idle();
  std::string error;
  ASSERT_TRUE(parse(p, {"--exit-on-idle", "-v"}, error));
  EXPECT_TRUE(p.flag_set("verbose"));  // the token after a bare --exit-on-idle is the next option
}

TEST(CliArgs, MistakesAreNamed) {
  ArgParser p = workers_and_idle();
  std::string error;
  EXPECT_FALSE(parse(p, {"-j"}, error));
  EXPECT_NE(error.find("-j: expected one argument"), std::string::npos) << error;
  EXPECT_FALSE(parse(p, {"-x3"}, error));
  EXPECT_NE(error.find("unrecognized argument: -x3"), std::string::npos) << error;
  EXPECT_FALSE(parse(p, {"-v1"}, error));  // a flag takes no attached value
  EXPECT_NE(p.usage().find("--exit-on-idle, --exit-when-idle [SECONDS]"), std::string::npos) << p.usage();
}
