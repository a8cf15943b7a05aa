// Data parallelism for the analyzer: parallel_for over an index range on a pool of worker threads
// sized to the machine. Work items are claimed dynamically (an atomic counter), so uneven items
// (one huge trace file, one hypothesis with many examples) balance themselves. The first exception
// thrown by an item is rethrown on the calling thread after all workers stop.
#pragma once

#include <cstddef>
#include <functional>

namespace traincheck {

// Worker count used when 0 is requested: std::thread::hardware_concurrency(), at least 1.
size_t default_thread_count();

// Calls fn(i) for i in [0, n), on up to `threads` threads (0: default_thread_count()).
void parallel_for(size_t n, size_t threads, const std::function<void(size_t)>& fn);

}  // namespace traincheck
