#include "trace/trace_store.h"

#include <gtest/gtest.h>

#include <sstream>

#include "trace/json_parse.h"

using namespace traincheck;

namespace {

struct Builder {
  std::string text;
  void api(const std::string& id, const std::string& type, const std::string& fn, int64_t time, int64_t tid = 1,
           const std::string& extra = "") {
    text += "{\"func_call_id\":\"" + id + "\",\"thread_id\":" + std::to_string(tid) +
            ",\"process_id\":7,\"meta_vars\":{\"step\":1,\"stage\":\"training\"},\"type\":\"" + type + "\",\"function\":\"" + fn +
            "\",\"is_bound_method\":true,\"obj_id\":99," + extra + "\"time\":" + std::to_string(time) + "}\n";
  }
  void call(const std::string& id, const std::string& fn, int64_t start, int64_t end, int64_t tid = 1, const std::string& pre_extra = "") {
    api(id, "function_call (pre)", fn, start, tid, pre_extra);
    api(id, "function_call (post)", fn, end, tid);
  }
  void var(const std::string& name, int64_t time, const std::string& attrs) {
    text += "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":7,\"thread_id\":1,"
            "\"meta_vars\":{\"step\":1},\"type\":\"state_change\",\"attributes\":" + attrs + ",\"time\":" + std::to_string(time) + "}\n";
  }
  TraceStore build(ApiSignatures sigs = {}) {
    std::ostringstream warnings;
    ReadOptions opt;
    opt.warnings = &warnings;
    return TraceStore("t", read_trace_text("t.log", text, opt), std::move(sigs), &warnings);
  }
};

std::vector<std::string_view> names(const TraceStore& t, const std::vector<uint32_t>& calls) {
  std::vector<std::string_view> out;
  for (uint32_t c : calls) out.push_back(t.function_of(t.calls()[c]));
  return out;
}

}  // namespace

TEST(TraceStore, ContainedCallsAreSameThreadStrictlyInsideAnyDepth) {
  Builder b;
  b.api("p", "function_call (pre)", "parent", 10);
  b.call("c1", "child", 11, 14);
  b.api("c2", "function_call (pre)", "child2", 15);
  b.call("g", "grandchild", 16, 17);
  b.api("c2", "function_call (post)", "child2", 18);
  b.call("other", "other_thread", 12, 13, /*tid=*/2);
  b.api("p", "function_call (post)", "parent", 20);
  b.call("after", "after", 21, 22);
  TraceStore t = b.build();
  const CallEvent* parent = t.find_call("p");
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(parent->status, CallStatus::Complete);
  EXPECT_EQ(names(t, t.contained_calls(*parent)), (std::vector<std::string_view>{"child", "child2", "grandchild"}));
  EXPECT_EQ(t.calls_of("child").size(), 1u);
  EXPECT_EQ(t.calls_of("nothing").size(), 0u);
}

TEST(TraceStore, TrailingOpenCallIsIncompleteAndLostPostIsDropped) {
  Builder b;
  b.api("outer", "function_call (pre)", "train", 1);
  b.api("lost", "function_call (pre)", "lost_post", 2);  // its post never arrives although `mid` returns
  b.api("mid", "function_call (pre)", "mid", 1);
  b.text.clear();
  b.api("outer", "function_call (pre)", "train", 1);
  b.api("mid", "function_call (pre)", "mid", 2);
  b.api("lost", "function_call (pre)", "lost_post", 3);
  b.api("mid", "function_call (post)", "mid", 4);
  b.call("x", "x", 5, 6);
  TraceStore t = b.build();
  ASSERT_NE(t.find_call("outer"), nullptr);
  EXPECT_EQ(t.find_call("outer")->status, CallStatus::Incomplete);
  EXPECT_EQ(t.find_call("outer")->end, t.end_time());
  EXPECT_EQ(t.find_call("lost"), nullptr);
  EXPECT_EQ(t.find_call("mid")->status, CallStatus::Complete);
}

TEST(TraceStore, MoreThanTwoRecordsPerCallIsAnError) {
  Builder b;
  b.call("a", "f", 1, 2);
  b.api("a", "function_call (post)", "f", 3);
  EXPECT_THROW(b.build(), TraceReadError);
}

TEST(TraceStore, ExceptionPostMakesAnExceptionCall) {
  Builder b;
  b.api("a", "function_call (pre)", "f", 1);
  b.api("a", "function_call (post) (exception)", "f", 2, 1, "\"exception\":\"ValueError\",\"exception_msg\":\"x\",");
  TraceStore t = b.build();
  EXPECT_EQ(t.find_call("a")->status, CallStatus::Exception);
}

TEST(TraceStore, VarStatesMergeEqualValuesAndRecordChanges) {
  Builder b;
  b.var("w", 1, "{\"data\":5,\"grad\":null,\"is_cuda\":false,\"_TRAINCHECK_data_ID\":1}");
  b.var("w", 2, "{\"data\":5.0,\"grad\":null,\"is_cuda\":false,\"_TRAINCHECK_data_ID\":1}");  // 5 == 5.0: no change
  b.call("zg", "zero_grad", 3, 6);
  b.var("w", 4, "{\"data\":5,\"grad\":7,\"is_cuda\":false,\"_TRAINCHECK_data_ID\":1}");
  b.var("w", 10, "{\"data\":6,\"grad\":7,\"is_cuda\":false,\"_TRAINCHECK_data_ID\":1}");
  TraceStore t = b.build();
  ASSERT_EQ(t.var_instances().size(), 1u);
  const VarInstance& v = t.var_instances()[0];
  EXPECT_EQ(v.attr("is_cuda"), nullptr);            // is_* properties are not states
  EXPECT_EQ(v.attr("_TRAINCHECK_data_ID"), nullptr);  // nor the tool's own ids
  const AttrHistory* data = v.attr("data");
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->states.size(), 2u);
  EXPECT_EQ(data->records_of(0).size(), 3u);
  ASSERT_EQ(data->records_of(1).size(), 1u);  // each state its own run of the records
  EXPECT_EQ(t.record(data->records_of(1)[0]).time, 10);
  EXPECT_EQ(t.record(data->records_of(0)[2]).time, 4);
  EXPECT_EQ(data->states[0].start, 1);
  EXPECT_EQ(data->end_of(0), 10);
  EXPECT_EQ(data->end_of(1), t.end_time());
  const AttrHistory* grad = v.attr("grad");
  ASSERT_EQ(grad->states.size(), 2u);
  EXPECT_TRUE(grad->states[0].value.is_null());
  // The grad change at time 4 lies inside zero_grad [3, 6]; the data change at 10 does not.
  auto changes = t.contained_var_changes(*t.find_call("zg"));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(t.attr(changes[0]).name, "grad");
  EXPECT_EQ(t.time_of(changes[0]), 4);
}

// Attributes held by every state record share their variable's record list; one missing from a record
// (absent, or NaN) keeps its own, and both give each state its own run of records.
TEST(TraceStore, AnAttributeMissingFromSomeRecordsKeepsItsOwnRecords) {
  Builder b;
  b.var("w", 1, "{\"data\":1,\"grad\":NaN}");
  b.var("w", 2, "{\"data\":1,\"grad\":3}");
  b.var("w", 3, "{\"data\":2}");
  b.var("w", 4, "{\"data\":2,\"grad\":4}");
  TraceStore t = b.build();
  const VarInstance& v = t.var_instances()[0];
  const AttrHistory* data = v.attr("data");
  const AttrHistory* grad = v.attr("grad");
  ASSERT_NE(data, nullptr);
  ASSERT_NE(grad, nullptr);
  ASSERT_EQ(data->records().size(), 4u);
  ASSERT_EQ(grad->records().size(), 2u);
  ASSERT_EQ(data->states.size(), 2u);
  ASSERT_EQ(grad->states.size(), 2u);
  auto times = [&](const AttrHistory& h, uint32_t s) {
    std::vector<int64_t> out;
    for (uint32_t r : h.records_of(s)) out.push_back(t.record(r).time);
    return out;
  };
  EXPECT_EQ(times(*data, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(times(*data, 1), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(times(*grad, 0), (std::vector<int64_t>{2}));
  EXPECT_EQ(times(*grad, 1), (std::vector<int64_t>{4}));
  EXPECT_EQ(grad->end_of(0), 4);
  EXPECT_EQ(grad->end_of(1), t.end_time());
}

TEST(TraceStore, ContextManagerArgumentsBoundWithRecordedSignature) {
  Builder b;
  const std::string cm = "torch.amp.autocast_mode.autocast";
  b.call("i", cm + ".__init__", 1, 2, 1, "\"args\":{\"0\":{\"autocast\":{}},\"1\":{\"str\":\"cuda\"}},\"kwargs\":{\"dtype\":{\"str\":\"torch.float16\"}},");
  b.call("e", cm + ".__enter__", 3, 4);
  b.call("f", "torch.nn.functional.relu", 5, 6);
  b.call("x", cm + ".__exit__", 7, 8);
  b.call("g", "torch.nn.functional.relu", 9, 10);
  Value sig_json;
  std::string error;
  ASSERT_TRUE(parse_json("{\"" + cm + ".__init__\": {\"params\": [{\"name\": \"self\"}, {\"name\": \"device_type\"}, "
                         "{\"name\": \"dtype\", \"default\": null}, {\"name\": \"enabled\", \"default\": true}]}}",
                         sig_json, error));
  TraceStore t = b.build(ApiSignatures::from_value(sig_json, "api_signatures.json"));
  auto inside = t.context_managers_at(5, 7, 1);
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(key_name(inside[0].key), "meta_vars.context_managers." + cm);
  EXPECT_EQ(to_json(inside[0].value), "{\"device_type\":\"cuda\",\"dtype\":\"torch.float16\",\"enabled\":true}");
  EXPECT_TRUE(t.context_managers_at(9, 7, 1).empty());
  EXPECT_TRUE(t.context_managers_at(5, 7, 2).empty());  // another thread

  // Without signatures the positional index names the argument.
  TraceStore plain = b.build();
  auto fallback = plain.context_managers_at(5, 7, 1);
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(to_json(fallback[0].value), "{\"1\":\"cuda\",\"dtype\":\"torch.float16\"}");
}

TEST(TraceStore, ASubclassesExitOnTheSameObjectClosesTheManagersSpan) {
  // torch.save: _open_file(_opener) overrides __exit__ only, so what _opener.__enter__ entered is exited
  // by _open_file.__exit__; left open, the span covered the rest of the trace.
  Builder b;
  b.call("i", "torch.serialization._opener.__init__", 1, 2);
  b.call("e", "torch.serialization._opener.__enter__", 3, 4);
  b.call("f", "torch.nn.functional.relu", 5, 6);
  b.call("x", "torch.serialization._open_file.__exit__", 7, 8);
  b.call("g", "torch.nn.functional.relu", 9, 10);
  TraceStore t = b.build();
  ASSERT_EQ(t.context_managers_at(5, 7, 1).size(), 1u);
  EXPECT_TRUE(t.context_managers_at(9, 7, 1).empty());
  // Another object's __exit__ of another class closes nothing.
  Builder other;
  other.call("i", "torch.serialization._opener.__init__", 1, 2);
  other.call("e", "torch.serialization._opener.__enter__", 3, 4);
  for (const char* type : {"function_call (pre)", "function_call (post)"})
    other.text += std::string("{\"func_call_id\":\"x\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1},\"type\":\"") +
                  type + "\",\"function\":\"torch.serialization._open_file.__exit__\",\"obj_id\":5,\"time\":" +
                  (type[15] == 'p' && type[16] == 'r' ? "7" : "8") + "}\n";
  other.call("g", "torch.nn.functional.relu", 9, 10);
  TraceStore open = other.build();
  EXPECT_EQ(open.context_managers_at(9, 7, 1).size(), 1u);
}

TEST(TraceStore, NestedSpansOfOneManagerGiveOneFieldTheInnermosts) {
  // Two live spans of one manager (nested, or one never exited): one field, with the inner one's
  // arguments, as online; two fields of one key counted an example twice in precondition learning.
  Builder b;
  auto line = [&](const char* id, const char* type, const std::string& fn, int64_t time, int obj, const std::string& extra) {
    b.text += std::string("{\"func_call_id\":\"") + id + "\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1},\"type\":\"function_call (" +
              type + ")\",\"function\":\"" + fn + "\",\"obj_id\":" + std::to_string(obj) + "," + extra + "\"time\":" + std::to_string(time) + "}\n";
  };
  const std::string cm = "torch.amp.autocast_mode.autocast";
  for (const auto& [id, obj, start, dtype] : {std::tuple{"o", 1, 1, "float16"}, std::tuple{"i", 2, 5, "bfloat16"}}) {
    const std::string init_id = std::string(id) + "_init", enter_id = std::string(id) + "_enter";
    line(init_id.c_str(), "pre", cm + ".__init__", start, obj, std::string("\"kwargs\":{\"dtype\":{\"str\":\"torch.") + dtype + "\"}},");
    line(init_id.c_str(), "post", cm + ".__init__", start + 1, obj, "");
    line(enter_id.c_str(), "pre", cm + ".__enter__", start + 2, obj, "");
    line(enter_id.c_str(), "post", cm + ".__enter__", start + 3, obj, "");
  }
  b.call("f", "torch.nn.functional.relu", 10, 11);
  TraceStore t = b.build();
  const std::vector<Field> inside = t.context_managers_at(10, 7, 1);
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(to_json(inside[0].value), "{\"dtype\":\"torch.bfloat16\"}");
  EXPECT_EQ(t.context_managers_at(4, 7, 1).size(), 1u);  // before the inner one: the outer alone
}

TEST(ApiSignatures, PositionalArgumentsTakeTheNameOfTheParameterAtTheirIndexWhateverItsKind) {
  // torch.Tensor.view(self, *shape): the original names the first argument *shape catches "shape" (its
  // invariant files constrain it by that name); one past the signature keeps its index.
  Value sig_json;
  std::string error;
  ASSERT_TRUE(parse_json(R"({"view": {"params": [{"name": "self"}, {"name": "shape", "kind": "VAR_POSITIONAL"}]}})", sig_json, error));
  const ApiSignatures sigs = ApiSignatures::from_value(sig_json, "api_signatures.json");
  Record pre;
  ASSERT_TRUE(parse_json(R"({"0":{"torch.Tensor":{}},"1":{"int":4},"2":{"int":8}})", sig_json, error));
  pre.set(intern_key("args"), sig_json);
  pre.set(intern_key("kwargs"), Value::object({}));
  pre.set(intern_key("function"), Value::string("view"));
  pre.set(intern_key("is_bound_method"), Value::boolean(true));
  pre.refresh_cached();
  std::vector<std::string> names;
  for (const Member& m : sigs.bind(pre, /*skip_self=*/true, /*with_defaults=*/false)) names.push_back(std::string(key_name(m.key)));
  EXPECT_EQ(names, (std::vector<std::string>{"shape", "2"}));
}

// A check without the signatures its invariants need says so, once, naming them: a
// live check that started before api_signatures.json existed would otherwise report violations an offline one does not.
TEST(ApiSignatures, TheApisBoundWithoutASignatureAreNamedUntilTheirSignatureArrives) {
  Value v;
  std::string error;
  auto pre_of = [&](const std::string& fn, const std::string& args) {
    Record pre;
    EXPECT_TRUE(parse_json(args, v, error));
    pre.set(intern_key("args"), v);
    pre.set(intern_key("kwargs"), Value::object({}));
    pre.set(intern_key("function"), Value::string(fn));
    pre.set(intern_key("is_bound_method"), Value::boolean(false));
    pre.refresh_cached();
    return pre;
  };
  ApiSignatures sigs;
  sigs.bind(pre_of("torch.relu", R"({"0":{"torch.Tensor":{}}})"), false, false);
  sigs.bind(pre_of("torch.no_args", "{}"), false, false);  // nothing named by position: not missing
  sigs.bind(pre_of("torch.add", R"({"0":{"int":1},"1":{"int":2}})"), true, false);
  sigs.bind(pre_of("torch.add", R"({"0":{"int":1},"1":{"int":2}})"), true, false);
  EXPECT_EQ(sigs.missing(), (std::vector<std::string>{"torch.add", "torch.relu"}));
  ASSERT_TRUE(parse_json(R"({"torch.relu": {"params": [{"name": "input"}]}})", v, error));
  sigs.merge(ApiSignatures::from_value(v, "api_signatures.json"));  // written later by the run
  EXPECT_EQ(sigs.missing(), (std::vector<std::string>{"torch.add"}));
  EXPECT_EQ(missing_signatures_message(sigs.missing()),
            "no signature recorded for 1 API whose arguments the invariants read (api_signatures.json missing, not "
            "written yet, or from another run); their positional arguments are named by index, so invariants over them "
            "may be judged wrongly: torch.add");
}
