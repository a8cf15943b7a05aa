// State records built from templates (check/online/var_line_templates.h): each is the record the trace
// parser gives the same line (fields, values and their kinds, cached members), and a line whose
// varying values the parser would read otherwise, or whose other bytes differ, is left to the parser.
#include "check/online/var_line_templates.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "check/record_description.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

class Parser {
 public:
  bool parse(const std::string& line, Record& out) {
    padded_ = line;
    padded_.append(kJsonPadding, '\0');
    return parse_trace_line(parser_, padded_.data(), line.size(), out, error_);
  }

 private:
  JsonParser parser_;
  std::string padded_, error_;
};

// What the line feed does with a line: built from a template, or parsed and learned.
struct Fed {
  Record record;
  bool built = false;
  bool ok = false;
};
Fed feed(VarLineTemplates& t, Parser& p, const std::string& line, uint32_t source = 0) {
  Fed f;
  f.built = t.build(source, line, f.record);
  if (f.built) {
    f.ok = true;
  } else {
    f.ok = p.parse(line, f.record);
    if (f.ok) t.learn(source, line, f.record);
  }
  return f;
}

// A parameter's state line as the collector writes it (record/event_formatter.cpp).
struct ParamLine {
  std::string name = "model.fc1.weight";
  std::string mode = "selective-sample";
  std::string dump_loc = "torch.optim.sgd.SGD.step";
  std::string step = "3", data = "2948709366369494254", data_id = "2064510624136512", grad = "null",
              grad_id, time = "5487591657391";
  std::vector<std::pair<std::string, std::string>> claims;  // attribute, literal
  std::string user;  // extra attribute members, "" for none
  std::string text() const {
    std::string s = "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"mode\":\"" + mode +
                    "\",\"dump_loc\":\"" + dump_loc +
                    "\",\"process_id\":13478,\"thread_id\":140356213267328,\"meta_vars\":{\"step\":" + step +
                    ",\"_DATA_PARALLEL_RANK\":0,\"stage\":\"training\"},\"type\":\"state_change\",\"attributes\":{"
                    "\"_TRAINCHECK_data_ID\":" + data_id + ",\"data\":" + data;
    if (!grad_id.empty()) s += ",\"_TRAINCHECK_grad_ID\":" + grad_id;
    s += ",\"dtype\":\"torch.float32\",\"grad\":" + grad +
         ",\"grad_fn\":null,\"is_cpu\":true,\"is_cuda\":false,\"is_leaf\":true,\"itemsize\":4,\"name\":null,"
         "\"nbytes\":4096,\"ndim\":2,\"requires_grad\":true,\"shape\":[64,16]";
    if (!user.empty()) s += "," + user;
    for (const auto& [a, v] : claims) s += ",\"" + a + "\":" + v;
    return s + "},\"time\":" + time + "}";
  }
};

void expect_same_as_parsed(const Fed& fed, const std::string& line) {
  Parser fresh;
  Record parsed;
  ASSERT_TRUE(fresh.parse(line, parsed)) << line;
  EXPECT_EQ(describe_record(fed.record), describe_record(parsed)) << line;
}

}  // namespace

TEST(VarLineTemplates, BuildsTheRecordTheParserGivesForLaterLinesOfAVariable) {
  VarLineTemplates t;
  Parser p;
  std::mt19937_64 rng(7);
  auto number = [&]() -> std::string {
    switch (rng() % 6) {
      case 0: return "0";
      case 1: return std::to_string(static_cast<int64_t>(rng()));  // either sign, up to 19 digits
      case 2: return "-9223372036854775808";
      case 3: return "9223372036854775807";
      case 4: return std::to_string(rng() % 1000);
      default: return "-" + std::to_string(1 + rng() % 100000);
    }
  };
  const std::vector<std::string> names = {"model.fc1.weight", "model.fc1.bias", "model.fc2.weight"};
  const std::vector<std::string> modes = {"selective-sample", "sample"};
  uint64_t lines = 0;
  for (int step = 0; step < 40; ++step)
    for (const std::string& name : names)
      for (int shape = 0; shape < 3; ++shape) {
        ParamLine l;
        l.name = name;
        l.mode = modes[static_cast<size_t>(shape) % 2];
        l.step = std::to_string(step);
        l.data = number();
        l.data_id = number();
        l.time = std::to_string(1000000 + step * 10 + shape);
        if (shape > 0) {  // a gradient after the backward pass: its digest and address
          l.grad = rng() % 5 ? number() : "null";
          l.grad_id = number();
        }
        if (shape == 2) {
          for (const char* claim : {"_TRAINCHECK_grad_reset", "_TRAINCHECK_model_training"})
            l.claims.emplace_back(claim, rng() % 3 == 0 ? "null" : (rng() % 2 ? "true" : "false"));
          if (rng() % 4 == 0) l.step = "null";
        }
        const std::string line = l.text();
        const Fed fed = feed(t, p, line);
        ASSERT_TRUE(fed.ok) << line;
        expect_same_as_parsed(fed, line);
        ++lines;
      }
  // Three shapes per variable (the mode, a gradient's address, the claims): all but the first line of
  // each shape come from templates.
  EXPECT_EQ(t.built(), lines - names.size() * 3);
  EXPECT_LE(t.templates(), names.size() * VarLineTemplates::kTemplatesPerVariable);
}

TEST(VarLineTemplates, LiteralsTheParserReadsAnotherWayAreLeftToIt) {
  Parser p;
  for (const char* data : {"-0", "1.0", "1e3", "1E3", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
                           "\"5\"", "[5]", "{}", "NaN", "Infinity", "-Infinity"}) {
    VarLineTemplates t;
    ParamLine l;
    ASSERT_FALSE(feed(t, p, l.text()).built);
    l.data = data;
    const Fed fed = feed(t, p, l.text());
    EXPECT_FALSE(fed.built) << data;
    if (fed.ok) expect_same_as_parsed(fed, l.text());
  }
  VarLineTemplates t;
  ParamLine l;
  feed(t, p, l.text());
  // Not JSON: the parser reports it, nothing is built.
  l.data = "007";
  EXPECT_FALSE(feed(t, p, l.text()).ok);
  l.data = "-9223372036854775808";  // the least int64 is one
  EXPECT_TRUE(feed(t, p, l.text()).built);
}

TEST(VarLineTemplates, ATimeThatIsNoIntegerIsTheParsersToReject) {
  VarLineTemplates t;
  Parser p;
  ParamLine l;
  feed(t, p, l.text());
  l.time = "null";
  const Fed fed = feed(t, p, l.text());
  EXPECT_FALSE(fed.built);
  EXPECT_FALSE(fed.ok);  // a record needs a numeric time
}

TEST(VarLineTemplates, BytesOutsideTheVaryingValuesMustBeTheTemplates) {
  VarLineTemplates t;
  Parser p;
  ParamLine l;
  l.user = "\"tp\":{\"data\":1,\"step\":2},\"time\":3";  // varying keys, but not at their place
  feed(t, p, l.text());
  l.data = "99";
  EXPECT_TRUE(feed(t, p, l.text()).built);
  for (const char* user : {"\"tp\":{\"data\":5,\"step\":2},\"time\":3", "\"tp\":{\"data\":1,\"step\":2},\"time\":4"}) {
    l.user = user;
    const Fed fed = feed(t, p, l.text());
    EXPECT_FALSE(fed.built) << user;
    expect_same_as_parsed(fed, l.text());
  }
  // Varying keys of an object inside an array are not the record's either.
  l.user = "\"tp\":[{\"time\":3,\"data\":4}]";
  feed(t, p, l.text());
  l.data = "98";
  EXPECT_TRUE(feed(t, p, l.text()).built);
  // Bytes after the last varying value (the time) count too.
  std::string longer = l.text();
  longer.insert(longer.size() - 1, ",\"x\":1");
  const Fed more = feed(t, p, longer);
  EXPECT_FALSE(more.built);
  expect_same_as_parsed(more, longer);
  // A space more, a longer name sharing the prefix: other bytes.
  ParamLine other;
  feed(t, p, other.text());
  std::string spaced = other.text();
  spaced.insert(spaced.find("\"dtype\""), " ");
  EXPECT_FALSE(feed(t, p, spaced).built);
  other.name = "model.fc1.weight2";
  EXPECT_FALSE(feed(t, p, other.text()).built);
}

TEST(VarLineTemplates, AVaryingKeyTwiceIsNeverATemplate) {
  Parser p;
  for (const std::string& user : {std::string("\"data\":7"), std::string("\"grad\":null")}) {
    VarLineTemplates t;
    ParamLine l;
    l.user = user;  // the attribute a second time: which of the two a lookup finds is the parser's rule
    Record r;
    ASSERT_TRUE(p.parse(l.text(), r));
    EXPECT_FALSE(t.learn(0, l.text(), r)) << user;
  }
  // The same flat key from a dotted member of the record and a nested one.
  VarLineTemplates t;
  std::string line = ParamLine().text();
  line.insert(1, "\"meta_vars.step\":4,");
  line.replace(0, line.find("\"var_name\""), "{");  // the name must lead: put the dotted key after it
  line.insert(line.find(",\"var_type\""), ",\"meta_vars.step\":4");
  Record r;
  ASSERT_TRUE(p.parse(line, r));
  EXPECT_FALSE(t.learn(0, line, r));
}

TEST(VarLineTemplates, SourcesAndEscapedNamesAreKeptApart) {
  VarLineTemplates t;
  Parser p;
  ParamLine l;
  feed(t, p, l.text(), 0);
  l.data = "1";
  EXPECT_FALSE(feed(t, p, l.text(), 1).built);  // source 1 learns its own
  EXPECT_TRUE(feed(t, p, l.text(), 0).built);
  ParamLine escaped;
  escaped.name = "model.a\\\"b";
  Record r;
  ASSERT_TRUE(p.parse(escaped.text(), r));
  EXPECT_FALSE(t.learn(0, escaped.text(), r));
  // An API record is never a template.
  const std::string call = "{\"func_call_id\":\"c_1\",\"thread_id\":1,\"process_id\":2,\"meta_vars\":{\"step\":1},"
                           "\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":5}";
  ASSERT_TRUE(p.parse(call, r));
  EXPECT_FALSE(t.learn(0, call, r));
}

TEST(VarLineTemplates, ShapesPerVariableAndTheBudgetBoundWhatIsKept) {
  VarLineTemplates t;
  Parser p;
  for (int shape = 0; shape < 6; ++shape) {
    ParamLine l;
    l.mode = "mode" + std::to_string(shape);
    feed(t, p, l.text());
  }
  EXPECT_EQ(t.templates(), VarLineTemplates::kTemplatesPerVariable);
  ParamLine recent, evicted;
  recent.mode = "mode5";
  evicted.mode = "mode0";
  recent.data = evicted.data = "12";
  EXPECT_TRUE(feed(t, p, recent.text()).built);
  EXPECT_FALSE(feed(t, p, evicted.text()).built);

  VarLineTemplates small(1500);  // about one template
  for (const char* name : {"a", "b", "c"}) {
    ParamLine l;
    l.name = name;
    feed(small, p, l.text());
  }
  EXPECT_EQ(small.templates(), 1u);
  EXPECT_LE(small.bytes(), 1500u);
}

TEST(VarLineTemplates, LinesInAnotherOrderThanLastStepAreStillBuiltRight) {
  VarLineTemplates t;
  Parser p;
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("model." + std::to_string(i) + ".weight");
  std::mt19937 rng(3);
  for (int step = 0; step < 5; ++step) {
    if (step >= 2) std::shuffle(names.begin(), names.end(), rng);
    for (const std::string& name : names) {
      ParamLine l;
      l.name = name;
      l.step = std::to_string(step);
      l.data = std::to_string(step * 1000 + static_cast<int>(name.size()));
      const Fed fed = feed(t, p, l.text());
      EXPECT_EQ(fed.built, step > 0) << name;
      expect_same_as_parsed(fed, l.text());
    }
  }
}
