// Records whose fields are shared (Record::share_fields): lookups and iteration see the same fields, a
// copy takes the shared set by reference, and an own field set over a shared one is told apart.
#include "trace/record.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

Record parsed(const std::string& line) {
  RawTrace raw = read_trace_text("t.log", line + "\n");
  EXPECT_EQ(raw.records.size(), 1u);
  return raw.records.at(0);
}

std::vector<std::string> field_texts(const Record& r) {
  std::vector<std::string> out;
  r.for_each_field([&](const Field& f) {
    std::string text = std::string(key_name(f.key)) + "=";
    append_value_json(text, f.value);
    out.push_back(text);
  });
  return out;
}

const std::string kLine =
    "{\"var_name\":\"w\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":5,\"thread_id\":1,\"time\":10,"
    "\"type\":\"state_change\",\"meta_vars\":{\"step\":2,\"stage\":\"training\"},\"attributes\":{\"data\":7}}";

}  // namespace

TEST(Record, SharedFieldsAreTheSameFieldsAndACopySharesThem) {
  const Record r = parsed(kLine);
  const std::vector<std::string> before = field_texts(r);
  Record own_only;
  own_only.fields = {};
  r.for_each_field([&](const Field& f) { own_only.fields.push_back(f); });
  own_only.refresh_cached();
  own_only.share_fields();
  EXPECT_TRUE(own_only.fields.empty());
  EXPECT_EQ(field_texts(own_only), before);
  EXPECT_EQ(own_only.get("attributes.data")->as_int(), 7);
  EXPECT_EQ(own_only.step, 2);
  const Record copy = own_only;
  EXPECT_TRUE(copy.shared_fields.same_payload(own_only.shared_fields));
  EXPECT_FALSE(own_only.shadows_shared_fields());
}

TEST(Record, AnOwnFieldSetOverASharedOneShadowsItAndTheSetIsNoLongerTakenAsCommon) {
  Record r;
  r.fields.push_back({intern_key("attributes.data"), Value::integer(7)});
  r.fields.push_back({intern_key("type"), Value::string("state_change")});
  std::sort(r.fields.begin(), r.fields.end(), [](const Field& a, const Field& b) { return a.key < b.key; });
  r.share_fields();
  r.shared_fields_common = true;  // as a template's records have it
  r.set(intern_key("time"), Value::integer(3));  // a key the shared set lacks
  r.set(intern_key("time"), Value::integer(4));  // and again: replaced in place
  EXPECT_FALSE(r.shadows_shared_fields());
  EXPECT_TRUE(r.shared_fields_common);
  r.set(intern_key("attributes.data"), Value::integer(8));
  EXPECT_TRUE(r.shadows_shared_fields());
  EXPECT_FALSE(r.shared_fields_common);  // what is derived from the shared set alone is not this record's
  EXPECT_EQ(r.get("attributes.data")->as_int(), 8);
  std::vector<std::string> texts = field_texts(r);
  EXPECT_EQ(std::count(texts.begin(), texts.end(), "attributes.data=8"), 1);
  EXPECT_EQ(std::count(texts.begin(), texts.end(), "attributes.data=7"), 0);
}
