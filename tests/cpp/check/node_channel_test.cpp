// The node-local channel: a directory of files behaves as a PeerStore (whole values, atomic
// set-if-absent), its leader creates and announces it, the other ranks find it only once announced, and
// it is removed when the last of its ranks leaves.
#include "check/online/node_channel.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "scratch_dir.h"
#include "testing/memory_peer_store.h"

namespace fs = std::filesystem;
using namespace traincheck;
using traincheck::testing::MemoryPeerStore;
using traincheck::testing::MemoryStoreData;

TEST(NodeChannel, AFileStoreSetsGetsChecksAndErasesKeysWithSlashes) {
  const fs::path dir = scratch::empty_dir("file_store");
  FilePeerStore store(dir.string(), PeerGroup{1, 4});
  EXPECT_EQ(store.connect()->rank, 1);
  EXPECT_FALSE(store.check({"s3/r1"}));
  store.multi_set({"s3/r1", "latest/r1"}, {std::string("a\0b", 3), "3 0"});
  EXPECT_TRUE(store.check({"s3/r1", "latest/r1"}));
  EXPECT_FALSE(store.check({"s3/r1", "s3/r2"}));
  EXPECT_EQ(store.multi_get({"s3/r1", "latest/r1"}), std::vector<std::string>({std::string("a\0b", 3), "3 0"}));
  store.multi_set({"s3/r1"}, {"again"});
  EXPECT_EQ(store.multi_get({"s3/r1"}).at(0), "again");
  store.erase("s3/r1");
  store.erase("s3/r1");  // a key already gone is no error
  EXPECT_FALSE(store.check({"s3/r1"}));
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename().string().rfind(".tmp", 0) == 0 ? 100 : 1;
  EXPECT_EQ(files, 1u);
  try {
    store.multi_get({"s9/r0"});
    FAIL() << "a missing key must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
  }
}

TEST(NodeChannel, SetIfAbsentKeepsTheFirstValue) {
  const fs::path dir = scratch::empty_dir("file_store_first");
  FilePeerStore store(dir.string(), PeerGroup{0, 2});
  EXPECT_EQ(store.set_if_absent("fold/s1", "a 0 1"), "a 0 1");
  EXPECT_EQ(store.set_if_absent("fold/s1", "b 4 2"), "a 0 1");
  EXPECT_EQ(store.multi_get({"fold/s1"}).at(0), "a 0 1");
}

TEST(NodeChannel, TheLeaderAnnouncesItsDirectoryAndTheLastRankToLeaveRemovesIt) {
  const fs::path root = scratch::empty_dir("channel_root");
  auto data = std::make_shared<MemoryStoreData>();
  MemoryPeerStore job(data, PeerGroup{0, 12});
  NodeChannel follower(job, 2, 1, 2, root.string());
  EXPECT_EQ(follower.open(), nullptr);  // not announced yet: never waited for
  NodeChannel leader(job, 2, 0, 2, root.string());
  std::unique_ptr<FilePeerStore> lead = leader.open();
  ASSERT_NE(lead, nullptr);
  EXPECT_EQ(fs::path(lead->dir()).parent_path(), root);
  std::unique_ptr<FilePeerStore> follow = follower.open();
  ASSERT_NE(follow, nullptr);
  EXPECT_EQ(follow->dir(), lead->dir());
  EXPECT_EQ(follow->connect()->rank, 1);
  lead->multi_set({"s0/r0"}, {"x"});
  EXPECT_EQ(follow->multi_get({"s0/r0"}).at(0), "x");
  // Another node's leader gets a directory of its own.
  NodeChannel other(job, 3, 0, 2, root.string());
  EXPECT_NE(other.open()->dir(), lead->dir());
  leader.leave();
  EXPECT_TRUE(fs::exists(lead->dir()));  // its follower still uses it
  follower.leave();
  EXPECT_FALSE(fs::exists(lead->dir()));
}

TEST(NodeChannel, ADirectoryThatIsNotOnThisMachineIsAnErrorNamingIt) {
  auto data = std::make_shared<MemoryStoreData>();
  MemoryPeerStore job(data, PeerGroup{0, 12});
  job.multi_set({node_channel_key(1)}, {"/nonexistent/traincheck-node1-abc"});
  NodeChannel follower(job, 1, 3, 4, "/unused");
  try {
    follower.open();
    FAIL() << "a missing directory must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/traincheck-node1-abc"), std::string::npos) << e.what();
  }
}
