#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace traincheck;

static std::string str(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}
static std::string dbl(double d) {
  std::string out;
  append_json_double(out, d);
  return out;
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(str("plain"), "\"plain\"");
  EXPECT_EQ(str("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(str("l1\nl2\t\r"), "\"l1\\nl2\\t\\r\"");
  EXPECT_EQ(str(std::string_view("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(str(std::string_view("nul\0x", 5)), "\"nul\\u0000x\"");
}

TEST(JsonString, KeepsUtf8BytesUnchanged) { EXPECT_EQ(str("caf\xc3\xa9"), "\"caf\xc3\xa9\""); }

TEST(JsonNumber, IntegersAtTheInt64Limits) {
  std::string out;
  append_json_int(out, std::numeric_limits<int64_t>::min());
  out += ',';
  append_json_uint(out, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(out, "-9223372036854775808,18446744073709551615");
}

TEST(JsonNumber, DoublesLikePythonRepr) {
  EXPECT_EQ(dbl(2.0), "2.0");
  EXPECT_EQ(dbl(-0.5), "-0.5");
  EXPECT_EQ(dbl(0.1), "0.1");
  EXPECT_EQ(dbl(1e-05), "1e-05");
  EXPECT_EQ(dbl(1e16), "1e+16");
  EXPECT_EQ(dbl(123456.789), "123456.789");
}

TEST(JsonNumber, NonFiniteDoublesBecomeNull) {
  EXPECT_EQ(dbl(std::nan("")), "null");
  EXPECT_EQ(dbl(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(dbl(-std::numeric_limits<double>::infinity()), "null");
}
