// api_signatures.json: a malformed file is an error naming the file, the line (and column) and the field.
#include "trace/api_signatures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

class ApiSignaturesFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tc_api_signatures_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    const fs::path p = dir_ / "api_signatures.json";
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The TraceReadError that loading `text` throws.
  TraceReadError load_error(const std::string& text) {
    const std::string path = write(text);
    try {
      ApiSignatures::load(path);
    } catch (const TraceReadError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for: " << text;
    return TraceReadError("", 0, "", "");
  }
  fs::path dir_;
};

const char* kGood = "{\n  \"a.f\": {\"params\": [{\"name\": \"self\"}]},\n";

}  // namespace

TEST_F(ApiSignaturesFile, WellFormedFileLoads) {
  const ApiSignatures s = ApiSignatures::load(write(std::string(kGood) + "  \"a.g\": {\"params\": []}\n}\n"));
  ASSERT_NE(s.find("a.f"), nullptr);
  EXPECT_EQ(s.find("a.f")->at(0).name, "self");
  ASSERT_NE(s.find("a.g"), nullptr);
  EXPECT_TRUE(s.find("a.g")->empty());
}

TEST_F(ApiSignaturesFile, MissingParamsNamesTheApisLineAndField) {
  const TraceReadError e = load_error(std::string(kGood) + "  \"a.g\": {\"args\": []}\n}\n");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.field(), "a.g.params");
  EXPECT_NE(std::string(e.what()).find("api_signatures.json:3: field 'a.g.params'"), std::string::npos) << e.what();
}

TEST_F(ApiSignaturesFile, BadParamNameNamesItsIndex) {
  const TraceReadError e = load_error(std::string(kGood) + "\n\n  \"a.g\": {\"params\": [{\"name\": \"x\"}, {\"name\": 3}]}\n}\n");
  EXPECT_EQ(e.line(), 5u);
  EXPECT_EQ(e.field(), "a.g.params[1].name");
}

TEST_F(ApiSignaturesFile, InvalidJsonNamesLineAndColumn) {
  // A missing comma between two members, on line 3: the walk stops at the second key's quote.
  const TraceReadError e = load_error(std::string(kGood) + "  \"a.g\": {\"params\": []} \"a.h\": {\"params\": []}\n}\n");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_NE(std::string(e.what()).find("invalid JSON at column 25"), std::string::npos) << e.what();
}

TEST_F(ApiSignaturesFile, TruncatedFileNamesItsEnd) {
  const TraceReadError e = load_error(std::string(kGood) + "  \"a.g\": {\"params\": [");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
}

TEST(TextPosition, CountsLinesAndColumnsFromOne) {
  const std::string_view text = "ab\ncd\n\nef";
  EXPECT_EQ(text_position(text, 0).line, 1u);
  EXPECT_EQ(text_position(text, 0).column, 1u);
  EXPECT_EQ(text_position(text, 4).line, 2u);
  EXPECT_EQ(text_position(text, 4).column, 2u);
  EXPECT_EQ(text_position(text, 8).line, 4u);
  EXPECT_EQ(text_position(text, 8).column, 2u);
}
