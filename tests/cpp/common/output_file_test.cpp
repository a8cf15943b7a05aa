// Output files: a symbolic link or a hard-linked file where an output goes is refused and its target left
// untouched, in every way a file is written (truncate, append, new, replace).
#include "common/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace traincheck;
namespace fs = std::filesystem;

namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tc_output_file_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
    fs::create_directories(dir_ / "elsewhere");
    victim_ = dir_ / "elsewhere" / "victim.txt";
    std::ofstream(victim_) << "precious\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // failed.log -> ../elsewhere/victim.txt
  std::string plant_link(const std::string& name) {
    const fs::path link = dir_ / "out" / name;
    fs::create_symlink(victim_, link);
    return link.string();
  }

  fs::path dir_, victim_;
};

}  // namespace

TEST_F(OutputFileTest, WritesAndReplacesPlainFiles) {
  const std::string path = (dir_ / "out" / "failed.log").string();
  write_output_file(path, "one\n");
  write_output_file(path, "two\n");
  EXPECT_EQ(read(path), "two\n");
  {
    OutputFile log(path, OutputMode::Append);
    log.write("three\n");
    log.close();
  }
  EXPECT_EQ(read(path), "two\nthree\n");
  replace_output_file(path, "four\n");
  EXPECT_EQ(read(path), "four\n");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "out")) ++entries;
  EXPECT_EQ(entries, 1u) << "no temporary file left beside it";
}

TEST_F(OutputFileTest, ASymbolicLinkIsRefusedNamingThePathAndItsTargetIsUntouched) {
  const std::string link = plant_link("report.html");
  for (OutputMode mode : {OutputMode::Truncate, OutputMode::Append}) {
    errno = 0;
    EXPECT_EQ(open_output_fd(link, mode), -1);
    EXPECT_EQ(errno, ELOOP);
  }
  EXPECT_EQ(open_output_fd(link, OutputMode::CreateNew), -1);
  try {
    write_output_file(link, "overwritten\n");
    FAIL() << "written through a symbolic link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(link + ": is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputFile(link, OutputMode::Append), std::runtime_error);
  EXPECT_THROW(replace_output_file(link, "overwritten\n"), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(link)) << "the link is left where it was, not replaced";
  EXPECT_EQ(read(victim_), "precious\n");
}

TEST_F(OutputFileTest, ADanglingLinkIsNotFollowedToCreateItsTarget) {
  const fs::path target = dir_ / "elsewhere" / "new.txt";
  const fs::path link = dir_ / "out" / "invariants.json";
  fs::create_symlink(target, link);
  EXPECT_THROW(write_output_file(link.string(), "x"), std::runtime_error);
  EXPECT_EQ(open_output_fd(link.string(), OutputMode::CreateNew), -1);
  EXPECT_FALSE(fs::exists(target));
}

TEST_F(OutputFileTest, AHardLinkedFileIsRefusedBeforeAnyOfItIsLost) {
  const fs::path link = dir_ / "out" / "passed.log";
  fs::create_hard_link(victim_, link);
  try {
    write_output_file(link.string(), "overwritten\n");
    FAIL() << "written through a hard link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("hard links"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(victim_), "precious\n");
}

TEST_F(OutputFileTest, AResultsSubfolderThatIsALinkIsRefused) {
  fs::create_symlink(dir_ / "elsewhere", dir_ / "out" / "trace_a");
  EXPECT_THROW(create_output_subfolder((dir_ / "out" / "trace_a").string()), std::runtime_error);
  create_output_subfolder((dir_ / "out" / "trace_b").string());
  EXPECT_TRUE(fs::is_directory(dir_ / "out" / "trace_b"));
}

TEST_F(OutputFileTest, TheDevicesAUserNamesAreWrittenAsTheyAre) {
  write_output_file("/dev/null", "discarded\n");  // not emptied, not refused
}
