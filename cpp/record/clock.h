// The recorder's only clock: CLOCK_MONOTONIC in ns, the time base of the original's traces
// (time.monotonic_ns), so times are comparable across the processes of one host.
#pragma once

#include <cstdint>
#include <ctime>

namespace traincheck {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace traincheck
