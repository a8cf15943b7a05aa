// golden_update_requested (golden_update.h): TC_UPDATE_GOLDEN rewrites goldens only outside CI; under CI
// the request fails the test instead of making every golden comparison pass.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "golden_update.h"

namespace {

// Sets (or unsets) an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST(GoldenUpdate, NotRequestedWithoutTheVariable) {
  ScopedEnv update("TC_UPDATE_GOLDEN", nullptr);
  ScopedEnv ci("CI", "true");
  EXPECT_FALSE(golden_update_requested());
}

TEST(GoldenUpdate, RequestedOutsideCi) {
  ScopedEnv update("TC_UPDATE_GOLDEN", "1");
  ScopedEnv ci("CI", nullptr);
  EXPECT_TRUE(golden_update_requested());
}

TEST(GoldenUpdate, RefusedLoudlyUnderCi) {
  ScopedEnv update("TC_UPDATE_GOLDEN", "1");
  ScopedEnv ci("CI", "true");
  bool requested = true;
  EXPECT_NONFATAL_FAILURE(requested = golden_update_requested(), "TC_UPDATE_GOLDEN is set under CI");
  EXPECT_FALSE(requested);
}
