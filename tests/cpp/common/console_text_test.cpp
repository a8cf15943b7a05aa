// Trace text on a terminal: a function name holding escape sequences is never printed raw.
#include "common/console_text.h"

#include <gtest/gtest.h>

#include "common/env_settings.h"

using namespace traincheck;

TEST(ConsoleText, ControlCharactersAreEscapedAndPrintableTextKept) {
  EXPECT_EQ(console_text("torch.nn.Linear.forward"), "torch.nn.Linear.forward");
  EXPECT_EQ(console_text("a\x1b[2Jb\nc\td\x7f"), "a\\x1b[2Jb\\nc\\td\\x7f");
  EXPECT_EQ(console_text("\xc2\x9b" "31m"), "\\u009b31m");      // CSI as a C1 control
  EXPECT_EQ(console_text("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // other UTF-8 stays
}

TEST(ConsoleText, LongTextIsCutWithTheCountOfWhatWasLeftOut) {
  EXPECT_EQ(console_text(std::string(1000, 'x'), 10), "xxxxxxxxxx... (990 more bytes)");
}

TEST(EnvSettings, AValueOutOfRangeOrNotANumberIsOneLineNamingTheVariableAndTheRange) {
  const EnvNumberSetting s{"TRAINCHECK_X", 0.5, 60, 10, "what it does"};
  EXPECT_FALSE(env_number_error(s, "0.5"));
  EXPECT_FALSE(env_number_error(s, "60"));
  for (const char* bad : {"", "abc", "1x", "0", "61", "nan", "inf", "-1"}) {
    const auto error = env_number_error(s, bad);
    ASSERT_TRUE(error) << bad;
    EXPECT_EQ(*error, std::string("TRAINCHECK_X='") + bad + "': expected a number from 0.5 to 60 (what it does)");
  }
  EXPECT_EQ(*env_number_error(s, "\x1b[2J"), "TRAINCHECK_X='?[2J': expected a number from 0.5 to 60 (what it does)");
}
