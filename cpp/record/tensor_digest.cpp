#include "record/tensor_digest.h"

#include <algorithm>

namespace traincheck {

uint64_t digest_block_multiplier(uint64_t block) {
  if (block == 0) return 1;
  uint64_t z = block * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) | 1;
}

namespace {

// One block's weighted sum. Four accumulators let the compiler keep several products in flight; the
// signed element type sign-extends as torch's .to(int64) of the bit view does.
template <typename Bits>
uint64_t block_sum(const Bits* x, int64_t n, const int64_t* w) {
  uint64_t acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k)
      acc[k] += static_cast<uint64_t>(static_cast<int64_t>(x[i + k])) * static_cast<uint64_t>(w[i + k]);
  for (; i < n; ++i) acc[0] += static_cast<uint64_t>(static_cast<int64_t>(x[i])) * static_cast<uint64_t>(w[i]);
  return acc[0] + acc[1] + acc[2] + acc[3];
}

template <typename Bits>
uint64_t digest(const Bits* x, int64_t count, const int64_t* w, int64_t period) {
  uint64_t total = 0;
  for (int64_t start = 0, block = 0; start < count; start += period, ++block) {
    const int64_t n = std::min(period, count - start);
    total += block_sum(x + start, n, w) * digest_block_multiplier(static_cast<uint64_t>(block));
  }
  return total;
}

}  // namespace

int64_t full_digest(const void* data, int64_t count, int width, const int64_t* weights, int64_t period) {
  uint64_t d = 0;
  switch (width) {
    case 1: d = digest(static_cast<const int8_t*>(data), count, weights, period); break;
    case 2: d = digest(static_cast<const int16_t*>(data), count, weights, period); break;
    case 4: d = digest(static_cast<const int32_t*>(data), count, weights, period); break;
    case 8: d = digest(static_cast<const int64_t*>(data), count, weights, period); break;
    default: return 0;
  }
  return static_cast<int64_t>(d);  // two's complement: the int64 torch's sum gives
}

}  // namespace traincheck
