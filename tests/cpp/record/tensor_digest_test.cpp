#include "record/tensor_digest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace traincheck {
namespace {

// The definition, element by element: x_i * w[i mod P] * m(i / P), wrapping.
template <typename Bits>
int64_t reference(const std::vector<Bits>& x, const std::vector<int64_t>& w, int64_t period) {
  uint64_t total = 0;
  for (size_t i = 0; i < x.size(); ++i)
    total += static_cast<uint64_t>(static_cast<int64_t>(x[i])) * static_cast<uint64_t>(w[i % period]) *
             digest_block_multiplier(i / period);
  return static_cast<int64_t>(total);
}

std::vector<int64_t> odd_weights(size_t n) {
  std::mt19937_64 g(7);
  std::vector<int64_t> w(n);
  for (auto& v : w) v = static_cast<int64_t>(g() | 1);
  return w;
}

template <typename Bits>
std::vector<Bits> random_bits(size_t n) {
  std::mt19937_64 g(11);
  std::vector<Bits> x(n);
  for (auto& v : x) v = static_cast<Bits>(g());
  return x;
}

TEST(TensorDigest, EqualsTheDefinitionForEveryWidthAcrossBlocks) {
  const int64_t period = 64;
  const auto w = odd_weights(period);
  for (size_t n : {0, 1, 3, 63, 64, 65, 200, 1031}) {
    EXPECT_EQ(full_digest(random_bits<int8_t>(n).data(), n, 1, w.data(), period), reference(random_bits<int8_t>(n), w, period)) << n;
    EXPECT_EQ(full_digest(random_bits<int16_t>(n).data(), n, 2, w.data(), period), reference(random_bits<int16_t>(n), w, period)) << n;
    EXPECT_EQ(full_digest(random_bits<int32_t>(n).data(), n, 4, w.data(), period), reference(random_bits<int32_t>(n), w, period)) << n;
    EXPECT_EQ(full_digest(random_bits<int64_t>(n).data(), n, 8, w.data(), period), reference(random_bits<int64_t>(n), w, period)) << n;
  }
}

TEST(TensorDigest, NarrowElementsAreSignExtended) {
  const std::vector<int64_t> w = {3};
  const uint8_t byte = 0xFF;  // as int8: -1
  EXPECT_EQ(full_digest(&byte, 1, 1, w.data(), 1), -3);
  const uint16_t half = 0x8000;  // as int16: -32768
  EXPECT_EQ(full_digest(&half, 1, 2, w.data(), 1), -3 * 32768);
}

TEST(TensorDigest, ASingleElementChangeAlwaysChangesTheDigest) {
  const int64_t period = 16;
  const auto w = odd_weights(period);
  auto x = random_bits<int32_t>(100);
  const int64_t before = full_digest(x.data(), 100, 4, w.data(), period);
  for (size_t i = 0; i < x.size(); ++i) {
    auto y = x;
    y[i] ^= 1 << (i % 31);
    EXPECT_NE(full_digest(y.data(), 100, 4, w.data(), period), before) << i;
  }
}

TEST(TensorDigest, TheFirstBlockMultiplierIsOneAndTheOthersOdd) {
  EXPECT_EQ(digest_block_multiplier(0), 1u);
  for (uint64_t b = 1; b < 100; ++b) EXPECT_EQ(digest_block_multiplier(b) & 1, 1u) << b;
  EXPECT_NE(digest_block_multiplier(1), digest_block_multiplier(2));
}

TEST(TensorDigest, AnUnknownWidthDigestsToZero) {
  const std::vector<int64_t> w = {1};
  const int32_t x = 5;
  EXPECT_EQ(full_digest(&x, 1, 3, w.data(), 1), 0);
}

}  // namespace
}  // namespace traincheck
