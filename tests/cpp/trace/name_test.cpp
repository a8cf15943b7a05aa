// Name (trace/name.h): interned names, and Name::of, which names a string value once per shared payload.
#include "trace/name.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "trace/trace_reader.h"

using namespace traincheck;

TEST(Name, EqualTextsAreOneNameWhateverThePayload) {
  const Value a = Value::string("model.0.weight");
  const Value b = Value::string("model.0.weight");  // the same text, another payload
  ASSERT_FALSE(a.same_payload(b));
  EXPECT_EQ(Name::of(&a), Name::of(&b));
  EXPECT_EQ(Name::of(&a), Name("model.0.weight"));
  EXPECT_NE(Name::of(&a), Name("model.1.weight"));
  EXPECT_TRUE(Name::of(nullptr).empty());
  const Value number = Value::integer(3);
  EXPECT_TRUE(Name::of(&number).empty());
  const Value empty = Value::string("");
  EXPECT_TRUE(Name::of(&empty).empty());
}

// The payload keeps its id once named: the copies sharing it (a reader shares a file's repeated
// strings) are named without looking the text up again.
TEST(Name, ASharedPayloadKeepsItsIdOnceNamed) {
  const Value first = Value::string("layer.bias");
  EXPECT_EQ(first.cached_name_id(), 0u);
  const Name name = Name::of(&first);
  EXPECT_EQ(first.cached_name_id(), name.id());
  const Value copy = first;
  EXPECT_EQ(copy.cached_name_id(), name.id());
  EXPECT_EQ(Name::of(&copy), name);
}

// Records read from one text share their repeated names' payloads, and name them alike from several
// threads at once (the id stored by racing threads is the same).
TEST(Name, RecordsNameTheirSharedStringsAlikeAcrossThreads) {
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += "{\"var_name\":\"w" + std::to_string(i % 5) + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":1,"
            "\"thread_id\":1,\"type\":\"state_change\",\"attributes\":{\"data\":1},\"time\":" + std::to_string(i + 1) + "}\n";
  const RawTrace read = read_trace_text("t", text);
  std::vector<std::vector<uint32_t>> seen(4);
  std::vector<std::thread> threads;
  for (auto& ids : seen)
    threads.emplace_back([&read, &ids] {
      for (const Record& r : read.records) ids.push_back(Name::of(r.get(keys().var_name)).id());
    });
  for (std::thread& t : threads) t.join();
  for (const auto& ids : seen) EXPECT_EQ(ids, seen[0]);
  for (size_t i = 0; i < read.records.size(); ++i) EXPECT_EQ(seen[0][i], Name("w" + std::to_string(i % 5)).id());
}
