// The `full` tensor digest (python/traincheck/tracking/digest.py) over a tensor's bits in host memory, in
// one pass and without temporaries: the same value torch's ops compute there, element by element.
//
// Element i, its bits read as a signed integer of the element's width and sign-extended to 64 bits, is
// multiplied by w[i mod P] * m(i / P), where w is the table of P odd weights and m the block multiplier
// (m(0) = 1); the products are summed. All arithmetic wraps modulo 2^64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace traincheck {

// m(block): 1 for the first block, then an odd 64-bit number per block (splitmix64 of the block index).
uint64_t digest_block_multiplier(uint64_t block);

// The digest of `count` contiguous elements of `width` bytes (1, 2, 4 or 8; any other width digests to 0)
// at `data`. `weights` holds at least min(count, period) entries; `period` (P) is the table's full length,
// the blocks' size.
int64_t full_digest(const void* data, int64_t count, int width, const int64_t* weights, int64_t period);

}  // namespace traincheck
