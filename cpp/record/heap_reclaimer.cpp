#include "record/heap_reclaimer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace traincheck {

uint64_t process_rss_bytes() {
  // statm: size resident shared text lib data dt, in pages. One read of a small file per writer pass.
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* end = nullptr;
  std::strtoull(buf, &end, 10);  // size
  const unsigned long long resident = std::strtoull(end, nullptr, 10);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

namespace {
void trim_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}
}  // namespace

HeapReclaimer::HeapReclaimer(uint64_t step_bytes, RssReader read_rss, Trimmer trim)
    : step_bytes_(step_bytes), read_rss_(std::move(read_rss)), trim_(std::move(trim)) {}

HeapReclaimer::HeapReclaimer(uint64_t step_bytes) : HeapReclaimer(step_bytes, &process_rss_bytes, &trim_heap) {}

void HeapReclaimer::poll() {
  if (step_bytes_ == 0) return;
  const uint64_t rss = read_rss_();
  if (rss == 0) return;
  if (rss > stats_.peak_rss_bytes) stats_.peak_rss_bytes = rss;
  if (mark_ == 0 || rss < mark_) {  // the first poll, or memory the program gave back itself
    mark_ = rss;
    return;
  }
  if (rss - mark_ < step_bytes_) return;
  trim_();
  ++stats_.trims;
  const uint64_t after = read_rss_();
  if (after != 0 && after < rss) stats_.released_bytes += rss - after;
  // Memory the program really holds stays resident: the next trim waits for another step of growth.
  mark_ = after != 0 ? after : rss;
}

}  // namespace traincheck
