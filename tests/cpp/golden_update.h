// Whether a golden test may rewrite its golden files. TC_UPDATE_GOLDEN asks for it, after an intended
// change (then `git diff` shows what changed). Under CI (the variable CI set, as CI runners and .ci/run
// set it) the request is refused with a test failure: a rewrite there would compare every golden with the
// output it was just overwritten by, and every golden test would pass whatever the code does.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

inline bool golden_update_requested() {
  if (!std::getenv("TC_UPDATE_GOLDEN")) return false;
  if (const char* ci = std::getenv("CI")) {
    ADD_FAILURE() << "TC_UPDATE_GOLDEN is set under CI (CI=" << ci
                  << "): golden files are never rewritten there, so the golden tests would prove nothing; unset it";
    return false;
  }
  return true;
}
