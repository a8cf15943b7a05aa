#include "check/online/online_context_managers.h"

#include <gtest/gtest.h>

#include "invariant/invariant.h"
#include "trace/json_parse.h"
#include "trace/trace_store.h"

using namespace traincheck;

namespace {

constexpr const char* kAutocast = "torch.amp.autocast_mode.autocast";

Record record(const std::string& fn, RecordType type, int64_t tid, int64_t obj, int64_t time, const std::string& kwargs = "{}") {
  Record r;
  r.set(intern_key("function"), Value::string(fn));
  r.set(intern_key("type"), Value::string(std::string(record_type_name(type))));
  r.set(intern_key("process_id"), Value::integer(1));
  r.set(intern_key("thread_id"), Value::integer(tid));
  r.set(intern_key("obj_id"), Value::integer(obj));
  r.set(intern_key("time"), Value::integer(time));
  if (type == RecordType::FunctionPre) {
    r.set(intern_key("args"), Value::object({}));
    Value kw;
    std::string error;
    EXPECT_TRUE(parse_json(kwargs, kw, error)) << error;
    r.set(intern_key("kwargs"), kw);
  }
  r.type = type;
  r.refresh_cached();
  return r;
}

// Offers `r` the way the online checker does; returns the value of the autocast field it was offered with.
std::string offered(OnlineContextManagers& cms, const Record& r) {
  Record scratch;
  const Record& seen = cms.before(r, scratch);
  const Value* v = seen.get(intern_key(std::string("meta_vars.context_managers.") + kAutocast));
  const std::string out = v ? to_json(*v) : "";
  cms.after(r);
  return out;
}

}  // namespace

TEST(OnlineContextManagers, NamedByPreconditionClauses) {
  Invariant inv = invariant_from_json(
      R"({"text_description": "t", "relation": "ConsistentOutputRelation", "params": [{"param_type": "APIParam", "api_full_name": "f"}],)"
      R"("precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": [)"
      R"({"type": "exist", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", "additional_path": "None", "prop_dtype": "None"}]}]}}})");
  EXPECT_EQ(OnlineContextManagers::named_by({inv}), std::set<std::string>{kAutocast});
  OnlineContextManagers cms({kAutocast}, nullptr);
  EXPECT_EQ(cms.functions().size(), 3u);
}

TEST(OnlineContextManagers, LiveFromEnterPostToExitPreOnItsThreadWithItsInitArguments) {
  OnlineContextManagers cms({kAutocast}, nullptr);
  const std::string cm = kAutocast;
  const std::string f16 = R"({"dtype":{"str":"torch.float16"}})";
  EXPECT_EQ(offered(cms, record(cm + ".__init__", RecordType::FunctionPre, 7, 5, 1, f16)), "");
  EXPECT_EQ(offered(cms, record(cm + ".__init__", RecordType::FunctionPost, 7, 5, 2)), "");
  EXPECT_EQ(offered(cms, record(cm + ".__enter__", RecordType::FunctionPre, 7, 5, 3)), "");
  EXPECT_EQ(offered(cms, record(cm + ".__enter__", RecordType::FunctionPost, 7, 5, 4)), R"({"dtype":"torch.float16"})");
  EXPECT_EQ(offered(cms, record("torch.relu", RecordType::FunctionPre, 7, 0, 5)), R"({"dtype":"torch.float16"})");
  EXPECT_EQ(offered(cms, record("torch.relu", RecordType::FunctionPre, 8, 0, 6)), "");  // another thread
  EXPECT_EQ(offered(cms, record(cm + ".__exit__", RecordType::FunctionPre, 7, 5, 7)), R"({"dtype":"torch.float16"})");
  EXPECT_EQ(offered(cms, record("torch.relu", RecordType::FunctionPre, 7, 0, 8)), "");
  EXPECT_EQ(cms.pending_inits(), 0u);
}

TEST(OnlineContextManagers, ObjectsNeverEnteredAreForgottenPastTheCap) {
  OnlineContextManagers cms({kAutocast}, nullptr);
  for (int64_t obj = 0; obj < 3 * static_cast<int64_t>(OnlineContextManagers::kMaxPendingInits); ++obj)
    offered(cms, record(std::string(kAutocast) + ".__init__", RecordType::FunctionPre, 7, obj, obj));
  EXPECT_LE(cms.pending_inits(), OnlineContextManagers::kMaxPendingInits);
}
