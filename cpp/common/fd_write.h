// Writing a whole buffer to a file descriptor: write(2) may write less than asked, or be interrupted.
#pragma once

#include <string_view>

namespace traincheck {

// Writes all of `text` to `fd`, retrying short writes and EINTR; false on any other error (what was
// written stays written).
bool write_all(int fd, std::string_view text);

}  // namespace traincheck
