// Text from traces and invariant files on the console: names are data, and a name may hold terminal escape
// sequences (ESC [ 2 J clears the screen) or be megabytes long. What reaches a terminal goes through
// console_text: control characters escaped (\n, \t, \x1b, and the C1 controls U+0080..U+009F as \u0080),
// and cut after `max_bytes` with the count of what was left out. Files keep the text as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace traincheck {

inline constexpr size_t kConsoleTextMaxBytes = 300;

std::string console_text(std::string_view text, size_t max_bytes = kConsoleTextMaxBytes);

}  // namespace traincheck
