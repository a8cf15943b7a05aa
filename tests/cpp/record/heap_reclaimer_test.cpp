#include "record/heap_reclaimer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace traincheck {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// A fake process: resident memory the test sets, and a trim that gives back what is "free".
struct FakeProcess {
  uint64_t live = 0;
  uint64_t free_in_heap = 0;
  int trims = 0;
  HeapReclaimer reclaimer(uint64_t step) {
    return HeapReclaimer(step, [this] { return live + free_in_heap; }, [this] {
      ++trims;
      free_in_heap = 0;
    });
  }
};

TEST(HeapReclaimerTest, SteadyMemoryIsNeverTrimmed) {
  FakeProcess p;
  p.live = 500 * kMiB;
  HeapReclaimer r = p.reclaimer(64 * kMiB);
  for (int i = 0; i < 100; ++i) {
    p.live = (500 + i % 50) * kMiB;  // up and down within the step
    r.poll();
  }
  EXPECT_EQ(p.trims, 0);
  EXPECT_EQ(r.stats().trims, 0u);
  EXPECT_EQ(r.stats().peak_rss_bytes, 549 * kMiB);
}

TEST(HeapReclaimerTest, FragmentingHeapIsHeldWithinOneStep) {
  FakeProcess p;
  p.live = 500 * kMiB;
  HeapReclaimer r = p.reclaimer(64 * kMiB);
  uint64_t peak = 0;
  for (int step = 0; step < 200; ++step) {
    p.free_in_heap += 50 * kMiB;  // two 25 MB holes that the next step cannot reuse
    r.poll();
    peak = std::max(peak, p.live + p.free_in_heap);
  }
  EXPECT_LE(peak, 500 * kMiB + 64 * kMiB + 50 * kMiB);
  EXPECT_GE(p.trims, 90);
  EXPECT_GT(r.stats().released_bytes, 4000 * kMiB);
}

TEST(HeapReclaimerTest, RealGrowthCostsOneTrimPerStep) {
  FakeProcess p;
  p.live = 100 * kMiB;
  HeapReclaimer r = p.reclaimer(64 * kMiB);
  for (int i = 0; i < 64; ++i) {
    p.live += 16 * kMiB;  // 1 GiB of memory the program keeps
    r.poll();
  }
  // The first poll sets the mark at 116 MiB; the other 63 add 1008 MiB: one trim per 64 MiB of it.
  EXPECT_EQ(p.trims, 1008 / 64);
  EXPECT_EQ(r.stats().released_bytes, 0u);
}

TEST(HeapReclaimerTest, ZeroStepIsOff) {
  FakeProcess p;
  HeapReclaimer r = p.reclaimer(0);
  for (int i = 0; i < 10; ++i) {
    p.free_in_heap += 100 * kMiB;
    r.poll();
  }
  EXPECT_EQ(p.trims, 0);
}

TEST(HeapReclaimerTest, UnknownResidentSizeNeverTrims) {
  int trims = 0;
  HeapReclaimer r(64 * kMiB, [] { return uint64_t{0}; }, [&] { ++trims; });
  for (int i = 0; i < 10; ++i) r.poll();
  EXPECT_EQ(trims, 0);
}

TEST(HeapReclaimerTest, ReadsThisProcessResidentSize) {
  const uint64_t before = process_rss_bytes();
  ASSERT_GT(before, 0u);
  std::vector<char> touched(64 * kMiB, 1);  // resident once written
  const uint64_t after = process_rss_bytes();
  EXPECT_GE(after, before + 48 * kMiB);
  EXPECT_EQ(touched[12345], 1);
}

}  // namespace
}  // namespace traincheck
