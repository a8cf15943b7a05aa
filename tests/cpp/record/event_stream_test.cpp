#include "record/event_stream.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "record/event_format.h"

using namespace traincheck;

namespace {

// Writes `count` events of `size` bytes whose first 8 bytes after the size field carry a sequence number.
void produce(EventStream& stream, uint64_t count, uint32_t size) {
  for (uint64_t i = 0; i < count; ++i) {
    std::byte* at = stream.reserve(size);
    ASSERT_NE(at, nullptr);
    std::memcpy(at, &size, sizeof size);
    std::memcpy(at + 8, &i, sizeof i);
    stream.commit(size);
  }
}

}  // namespace

TEST(EventStream, HandsOverEventsAcrossChunksInOrderWhileTheProducerRuns) {
  ChunkPool pool(64);
  EventStream stream(pool, 1, std::string(32, 'a'));
  constexpr uint64_t kEvents = 200000;  // 200000 x 48 bytes: ~9 chunks
  std::thread producer([&] { produce(stream, kEvents, 48); });
  uint64_t expected = 0;
  bool in_order = true;
  while (expected < kEvents) {
    stream.drain([&](const std::byte* event) {
      uint64_t seq;
      std::memcpy(&seq, event + 8, sizeof seq);
      in_order = in_order && seq == expected;
      ++expected;
    });
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kEvents);
  // Drained chunks went back to the pool: far fewer chunks than events' worth were ever allocated.
  EXPECT_LT(pool.allocated(), 64u);
}

TEST(EventStream, DrainSeesNothingBeforeTheFirstCommit) {
  ChunkPool pool(4);
  EventStream stream(pool, 1, std::string(32, 'a'));
  EXPECT_EQ(stream.drain([](const std::byte*) {}), 0u);
  produce(stream, 3, 16);
  EXPECT_EQ(stream.drain([](const std::byte*) {}), 3u);
  EXPECT_EQ(stream.drain([](const std::byte*) {}), 0u);
}

TEST(EventStream, ReserveFailsWhenThePoolIsExhaustedInsteadOfBlocking) {
  ChunkPool pool(1);
  EventStream stream(pool, 1, std::string(32, 'a'));
  const uint32_t big = Chunk::kBytes / 2 + 8;
  ASSERT_NE(stream.reserve(big), nullptr);
  std::memcpy(stream.reserve(big), &big, sizeof big);
  stream.commit(big);
  EXPECT_EQ(stream.reserve(big), nullptr);  // a second chunk would exceed the cap of one
}
