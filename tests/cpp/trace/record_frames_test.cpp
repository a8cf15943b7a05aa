// Trace records in a binary form, as the cross-rank summaries carry them (trace/record_frames.h): a record
// read back equals the record's kept fields exactly (a float keeps its bits, NaN included, which JSON
// wrote as null), chunks read alone, and a malformed sequence is refused with where and why, keeping the
// records it can read.
#include "trace/record_frames.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <variant>

#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

Record record_of(const std::string& line) {
  const RawTrace raw = read_trace_text("t.log", line + "\n");
  EXPECT_EQ(raw.records.size(), 1u);
  return raw.records.at(0);
}

std::string state_line(int p, const std::string& data = "7") {
  char name[32];
  std::snprintf(name, sizeof name, "model.%03d.weight", p);  // one width: records of one size
  return "{\"var_name\":\"" + std::string(name) +
         "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":5,\"thread_id\":1,\"time\":10,"
         "\"type\":\"state_change\",\"meta_vars\":{\"step\":2,\"stage\":\"training\"},"
         "\"attributes\":{\"data\":" + data + ",\"shape\":[2,3],\"dtype\":\"torch.float32\",\"flag\":true,\"none\":null}}";
}

std::vector<KeyId> keys_of(std::initializer_list<const char*> names) {
  std::vector<KeyId> out;
  for (const char* n : names) out.push_back(intern_key(n));
  return out;
}

const std::vector<KeyId> kAll = keys_of({"type", "process_id", "thread_id", "time", "var_name", "var_type", "meta_vars.step",
                                         "meta_vars.stage", "attributes.data", "attributes.shape", "attributes.dtype", "attributes.flag",
                                         "attributes.none"});

std::vector<Record> decode_all(const std::string& summary) {
  RecordFrameDecoder decoder;
  std::vector<Record> out;
  std::string error;
  EXPECT_TRUE(decoder.decode(summary, out, error)) << error;
  return out;
}

// Frames written by hand (record_frames.h's layout), as another process's build may order them.
struct HandFrames {
  using Field = std::pair<uint16_t, std::variant<int64_t, std::string>>;  // key index, value
  std::string bytes;
  template <typename T>
  void put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  size_t open(char kind) {
    bytes += kind;
    put<uint32_t>(0);
    return bytes.size();
  }
  void close(size_t start) {
    const auto size = static_cast<uint32_t>(bytes.size() - start);
    std::memcpy(bytes.data() + start - 4, &size, 4);
  }
  void keys(const std::vector<std::string>& names) {
    const size_t start = open('K');
    put<uint16_t>(static_cast<uint16_t>(names.size()));
    for (const std::string& n : names) {
      put<uint16_t>(static_cast<uint16_t>(n.size()));
      bytes += n;
    }
    close(start);
  }
  void record(const std::vector<Field>& fields) {
    const size_t start = open('R');
    put<uint16_t>(static_cast<uint16_t>(fields.size()));
    for (const auto& [index, value] : fields) {
      put<uint16_t>(index);
      if (const int64_t* i = std::get_if<int64_t>(&value)) {
        bytes += static_cast<char>(3);
        put<int64_t>(*i);
      } else {
        const std::string& text = std::get<std::string>(value);
        bytes += static_cast<char>(5);
        put<uint32_t>(static_cast<uint32_t>(text.size()));
        bytes += text;
      }
    }
    close(start);
  }
};

// Keys in an order of their own: two this process interned last (so their ids sort after the required
// ones), the later first, then the required fields.
const std::vector<std::string> kHandKeys = {"attributes.hand_b", "attributes.hand_a", "type",     "process_id",
                                            "thread_id",         "time",              "var_name", "var_type"};

std::vector<HandFrames::Field> hand_record(const std::string& name, int64_t a, int64_t b) {
  return {{0, b}, {1, a}, {2, std::string("state_change")}, {3, int64_t{5}}, {4, int64_t{1}}, {5, int64_t{10}},
          {6, name}, {7, std::string("torch.nn.Parameter")}};
}

}  // namespace

TEST(RecordFrames, ARecordReadBackHoldsExactlyItsKeptFields) {
  const Record r = record_of(state_line(0, "1.5"));
  RecordFrameEncoder encoder(kAll);
  std::string summary = encoder.key_frame();
  encoder.append_record(summary, r);
  const std::vector<Record> back = decode_all(summary);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].to_value(), r.to_value());  // every field kept here: the same record
  EXPECT_EQ(back[0].var_name, r.var_name);
  EXPECT_EQ(back[0].step, 2);
  EXPECT_EQ(back[0].stage, "training");
  EXPECT_TRUE(back[0].get("attributes.shape")->is_array());
  EXPECT_TRUE(back[0].get("attributes.none")->is_null());
}

// A record's shared fields encoded once (append_fields) and appended after its own ones read back as
// the record, whatever the order: the same as its frame written field by field.
TEST(RecordFrames, AFrameOfOwnFieldsThenEncodedSharedOnesReadsAsTheRecord) {
  Record r = record_of(state_line(0, "1.5"));
  const RecordFrameEncoder encoder(keys_of({"type", "process_id", "thread_id", "time", "var_name", "var_type",
                                            "attributes.data", "attributes.shape", "meta_vars.step"}));
  std::string whole = encoder.key_frame();
  encoder.append_record(whole, r);
  // Split: time and data own, the rest shared.
  Record split = r;
  split.fields.clear();
  split.shared_fields = Value();
  Object shared;
  r.for_each_field([&](const Field& f) {
    const std::string_view key = key_name(f.key);
    (key == "time" || key == "attributes.data" ? split.fields : shared).push_back(f);
  });
  split.shared_fields = Value::object(shared);
  std::string encoded;
  const uint16_t count = encoder.append_fields(encoded, shared.data(), shared.data() + shared.size());
  EXPECT_EQ(count, 7u);  // the kept ones of the shared fields
  std::string parts = encoder.key_frame();
  encoder.append_frame(parts, split.fields.data(), split.fields.data() + split.fields.size(), encoded, count);
  const std::vector<Record> a = decode_all(whole), b = decode_all(parts);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].to_value(), a[0].to_value());
  EXPECT_EQ(b[0].step, a[0].step);
  EXPECT_EQ(b[0].var_name, a[0].var_name);
}

TEST(RecordFrames, FieldsNotKeptAreLeftOut) {
  const Record r = record_of(state_line(0));
  RecordFrameEncoder encoder(keys_of({"type", "process_id", "thread_id", "time", "var_name", "var_type", "attributes.data"}));
  std::string summary = encoder.key_frame();
  encoder.append_record(summary, r);
  const std::vector<Record> back = decode_all(summary);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].get("attributes.shape"), nullptr);
  EXPECT_EQ(back[0].get("attributes.dtype"), nullptr);
  EXPECT_EQ(back[0].get("attributes.data")->as_int(), 7);
  EXPECT_EQ(back[0].stage, "init");  // the reader's default for a record without a stage, as for a line
}

TEST(RecordFrames, AFloatKeepsItsBitsNaNIncluded) {
  Record r = record_of(state_line(0));
  r.set(intern_key("attributes.data"), Value::real(std::nan("")));
  RecordFrameEncoder encoder(kAll);
  std::string summary = encoder.key_frame();
  encoder.append_record(summary, r);
  const std::vector<Record> back = decode_all(summary);
  ASSERT_EQ(back.size(), 1u);
  ASSERT_TRUE(back[0].get("attributes.data")->is_double());
  EXPECT_TRUE(std::isnan(back[0].get("attributes.data")->as_double()));
}

TEST(RecordFrames, ChunksAreCutAtRecordsAndEachReadsAlone) {
  RecordFrameEncoder encoder(kAll);
  std::string summary = encoder.key_frame();
  std::string one;
  encoder.append_record(one, record_of(state_line(0)));
  for (int p = 0; p < 100; ++p) encoder.append_record(summary, record_of(state_line(p)));
  const size_t max_bytes = encoder.key_frame().size() + 10 * one.size() + 5;
  uint64_t too_large = 0;
  const std::vector<std::string> chunks = chunk_record_frames(summary, max_bytes, too_large);
  EXPECT_EQ(too_large, 0u);
  ASSERT_EQ(chunks.size(), 10u);
  size_t records = 0;
  for (const std::string& chunk : chunks) {
    EXPECT_LE(chunk.size(), max_bytes);
    EXPECT_EQ(count_record_frames(chunk), 10u);
    records += decode_all(chunk).size();  // a new decoder: the chunk's own key frame suffices
  }
  EXPECT_EQ(records, 100u);
  EXPECT_EQ(decode_all(chunks[3] + chunks[7]).at(0).var_name, "model.030.weight");
}

TEST(RecordFrames, ARecordLargerThanAChunkIsLeftOutAndCounted) {
  RecordFrameEncoder encoder(kAll);
  std::string summary = encoder.key_frame();
  encoder.append_record(summary, record_of(state_line(0)));
  encoder.append_record(summary, record_of(state_line(1, "\"" + std::string(5000, 'x') + "\"")));
  encoder.append_record(summary, record_of(state_line(2)));
  uint64_t too_large = 0;
  const std::vector<std::string> chunks = chunk_record_frames(summary, 2000, too_large);
  EXPECT_EQ(too_large, 1u);
  std::vector<Record> back;
  for (const std::string& chunk : chunks)
    for (Record& r : decode_all(chunk)) back.push_back(std::move(r));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].var_name, "model.002.weight");
}

TEST(RecordFrames, AMalformedSequenceIsRefusedWithWhereAndWhyKeepingTheRecordsItCanRead) {
  RecordFrameEncoder encoder(kAll);
  std::string good = encoder.key_frame();
  encoder.append_record(good, record_of(state_line(0)));
  encoder.append_record(good, record_of(state_line(1)));
  auto refused = [](const std::string& summary, size_t kept_records, const std::string& why) {
    RecordFrameDecoder decoder;
    std::vector<Record> out;
    std::string error;
    EXPECT_FALSE(decoder.decode(summary, out, error));
    EXPECT_EQ(out.size(), kept_records);
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_NE(error.find("at byte "), std::string::npos) << error;
  };
  refused(good.substr(0, good.size() - 3), 1, "runs past the end");
  refused("{\"var_name\": \"a\"}\n", 0, "unknown frame kind");  // a JSON summary of an older build
  refused(good.substr(encoder.key_frame().size()), 0, "without a key frame before it");
  // A record frame whose first key index points past the key frame: that record only.
  std::string bad_index = good;
  const size_t first_field = encoder.key_frame().size() + 5 + 2;
  const uint16_t past = 999;
  std::memcpy(bad_index.data() + first_field, &past, sizeof past);
  refused(bad_index, 1, "not in the key frame");
  // A record missing a field every record must have.
  RecordFrameEncoder without_type(keys_of({"process_id", "thread_id", "time", "var_name", "var_type"}));
  std::string untyped = without_type.key_frame();
  without_type.append_record(untyped, record_of(state_line(0)));
  refused(untyped, 0, "field 'type'");
}

TEST(RecordFrames, KeysInAnotherOrderAreReadIntoSortedFields) {
  intern_key("attributes.hand_a");  // before hand_b: a's id is the smaller
  intern_key("attributes.hand_b");
  HandFrames f;
  f.keys(kHandKeys);
  f.record(hand_record("w", 1, 2));
  const std::vector<Record> back = decode_all(f.bytes);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(std::is_sorted(back[0].fields.begin(), back[0].fields.end(), [](const Field& x, const Field& y) { return x.key < y.key; }));
  EXPECT_EQ(back[0].get("attributes.hand_a")->as_int(), 1);
  EXPECT_EQ(back[0].get("attributes.hand_b")->as_int(), 2);
  EXPECT_EQ(back[0].var_name, "w");
}

TEST(RecordFrames, ABadRecordIsSkippedAndTheRestRead) {
  HandFrames f;
  f.keys(kHandKeys);
  f.record(hand_record("first", 1, 2));
  std::vector<HandFrames::Field> twice = hand_record("bad", 1, 2);
  twice.push_back({1, int64_t{3}});  // attributes.hand_a again
  f.record(twice);
  f.record(hand_record("last", 1, 2));
  RecordFrameDecoder decoder;
  std::vector<Record> out;
  std::string error;
  EXPECT_FALSE(decoder.decode(f.bytes, out, error));
  EXPECT_NE(error.find("'attributes.hand_a' twice"), std::string::npos) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].var_name, "first");
  EXPECT_EQ(out[1].var_name, "last");
}
