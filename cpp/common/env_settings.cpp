#include "common/env_settings.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace traincheck {

namespace {

std::string show(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

}  // namespace

std::optional<std::string> env_number_error(const EnvNumberSetting& setting, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool parsed = !text.empty() && end != text.c_str() && *end == '\0' && std::isfinite(value);
  if (parsed && value >= setting.low && value <= setting.high) return std::nullopt;
  std::string shown;  // the value as given, control characters escaped (it ends up on a terminal)
  for (unsigned char c : text) shown += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  return std::string(setting.name) + "='" + shown + "': expected a number from " + show(setting.low) + " to " +
         show(setting.high) + " (" + setting.meaning + ")";
}

double read_env_number(const EnvNumberSetting& setting) {
  const char* text = std::getenv(setting.name);
  if (text == nullptr) return setting.fallback;
  if (auto error = env_number_error(setting, text)) throw std::invalid_argument(*error);
  return std::strtod(text, nullptr);
}

}  // namespace traincheck
