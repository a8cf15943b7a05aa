// Numeric TRAINCHECK_* settings of the native commands, read from the environment once at start. A value
// that is not a number in the accepted range is an error naming the variable and the range (one line),
// never a silent fallback nor a crash later (python/traincheck/settings.py does the same for collect).
#pragma once

#include <optional>
#include <string>

namespace traincheck {

struct EnvNumberSetting {
  const char* name;
  double low, high, fallback;
  const char* meaning;  // what the value does, for the error message
};

// The setting's value: `fallback` when unset. Throws std::invalid_argument with the one-line message
// ("NAME='text': expected a number from LOW to HIGH (meaning)") when set to anything else.
double read_env_number(const EnvNumberSetting& setting);

// The message of read_env_number's error for `text`, or nullopt when `text` is a valid value.
std::optional<std::string> env_number_error(const EnvNumberSetting& setting, const std::string& text);

}  // namespace traincheck
