#include "record/event_formatter.h"

#include <gtest/gtest.h>

#include "record/event_format.h"
#include "record/payload_encoder.h"

using namespace traincheck;

namespace {

struct Fixture {
  StringTable names;
  StringTable metas;
  uint32_t meta_id = metas.add("\"stage\":\"training\"");
  FormatContext ctx{names, metas, 42, 7, "0123456789abcdef0123456789abcdef"};

  std::string format(EventKind kind, uint8_t flags, uint32_t api, const PayloadEncoder* payload,
                     uint64_t obj_id = 0) {
    std::vector<std::byte> event(align8(sizeof(EventHeader) + (payload ? payload->size() : 0)));
    EventHeader h{static_cast<uint32_t>(event.size()), kind, flags, 0, api, meta_id, 2000, 1000, obj_id, 1};
    std::memcpy(event.data(), &h, sizeof h);
    if (payload) std::memcpy(event.data() + sizeof h, payload->data(), payload->size());
    std::string out;
    format_event(out, event.data(), ctx);
    return out;
  }
};

}  // namespace

TEST(EventFormatter, PreRecordWithoutArgumentsHasTheOriginalKeys) {
  Fixture f;
  const uint32_t api = f.names.add("torch.optim.optimizer.Optimizer.zero_grad");
  EXPECT_EQ(f.format(EventKind::kCallPre, kBoundMethod | kHasObjId, api, nullptr, 99),
            "{\"func_call_id\":\"0123456789abcdef0123456789abcdef_1000\",\"thread_id\":7,\"process_id\":42,"
            "\"meta_vars\":{\"step\":1,\"stage\":\"training\"},\"type\":\"function_call (pre)\","
            "\"function\":\"torch.optim.optimizer.Optimizer.zero_grad\",\"is_bound_method\":true,"
            "\"obj_id\":99,\"time\":2000}\n");
}

TEST(EventFormatter, ArgumentsAreTypedAndContainersKeepJsonValues) {
  Fixture f;
  const uint32_t api = f.names.add("torch.nn.functional.dropout");
  PayloadEncoder p;
  p.section(SectionTag::kArgs);
  size_t npos = p.begin_count();
  p.position(0);
  p.integer(3);
  p.position(1);
  p.real(0.5);
  p.position(2);
  size_t list = p.begin_container(ValueTag::kTuple);
  p.integer(8);
  p.integer(2);
  p.end_container(list, 2);
  p.position(3);
  p.none();
  p.end_container(npos, 4);
  size_t nkw = p.begin_count();
  p.text("inplace");
  p.boolean(false);
  p.text("mode");
  p.str("a\"b");
  p.end_container(nkw, 2);
  const std::string line = f.format(EventKind::kCallPre, 0, api, &p);
  EXPECT_NE(line.find("\"args\":{\"0\":{\"int\":3},\"1\":{\"float\":0.5},\"2\":{\"tuple\":[8,2]},"
                      "\"3\":{\"NoneType\":null}},\"kwargs\":{\"inplace\":{\"bool\":false},"
                      "\"mode\":{\"str\":\"a\\\"b\"}}"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("\"obj_id\":null"), std::string::npos);
}

TEST(EventFormatter, MetaVarsCarryTheHeadersStepBeforeThePublishedMembers) {
  Fixture f;
  const uint32_t api = f.names.add("torch.relu");
  f.meta_id = f.metas.add("");  // nothing published but the step
  EXPECT_NE(f.format(EventKind::kCallPre, 0, api, nullptr).find(",\"meta_vars\":{\"step\":1},"), std::string::npos);
  f.meta_id = StringTable::kInvalid;  // a full table: the step alone, still valid JSON
  EXPECT_NE(f.format(EventKind::kCallPre, 0, api, nullptr).find(",\"meta_vars\":{\"step\":1},"), std::string::npos);
}

TEST(EventFormatter, FilteredArgumentsKeepTheirPositionalIndices) {
  // Selective mode records only the arguments an invariant names: the indices must survive the gaps.
  Fixture f;
  const uint32_t api = f.names.add("torch.nn.functional.dropout");
  PayloadEncoder p;
  p.section(SectionTag::kArgs);
  size_t npos = p.begin_count();
  p.position(2);
  p.boolean(true);
  p.end_container(npos, 1);
  size_t nkw = p.begin_count();
  p.end_container(nkw, 0);
  const std::string line = f.format(EventKind::kCallPre, 0, api, &p);
  EXPECT_NE(line.find("\"args\":{\"2\":{\"bool\":true}},\"kwargs\":{}"), std::string::npos) << line;
}

TEST(EventFormatter, TensorPayloadNamesTheTensorTypeAndDerivesSizes) {
  Fixture f;
  const uint32_t api = f.names.add("torch._VariableFunctionsClass.rand");
  const uint32_t dtype = f.names.add("torch.float32");
  PayloadEncoder p;
  p.section(SectionTag::kReturn);
  TensorSummary t{dtype, kTensorIsCpu | kTensorIsLeaf, 2, 4, 0, 1234, 0};
  const int64_t dims[] = {3, 5};
  p.tensor(t, dims);
  const std::string line = f.format(EventKind::kCallPost, 0, api, &p);
  EXPECT_NE(line.find("\"return_values\":{\"torch.FloatTensor\":{\"_TRAINCHECK_data_ID\":1234,"
                      "\"dtype\":\"torch.float32\",\"grad\":null,\"grad_fn\":null,\"is_cpu\":true,"
                      "\"is_cuda\":false,\"is_leaf\":true"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("\"nbytes\":60,\"ndim\":2"), std::string::npos) << line;
  EXPECT_NE(line.find("\"shape\":[3,5]}}"), std::string::npos) << line;
  EXPECT_NE(line.find("\"type\":\"function_call (post)\""), std::string::npos);
}

TEST(EventFormatter, TupleReturnBecomesAListOfTypedValues) {
  Fixture f;
  PayloadEncoder p;
  p.section(SectionTag::kReturn);
  size_t tuple = p.begin_container(ValueTag::kTuple);
  p.integer(1);
  p.object(f.names.add("torch.optim.sgd.SGD"));
  p.end_container(tuple, 2);
  const std::string line = f.format(EventKind::kCallPost, 0, f.names.add("f"), &p);
  EXPECT_NE(line.find("\"return_values\":[{\"int\":1},{\"torch.optim.sgd.SGD\":{}}]"), std::string::npos)
      << line;
}

TEST(EventFormatter, ExceptionRecordCarriesTypeAndMessage) {
  Fixture f;
  PayloadEncoder p;
  p.section(SectionTag::kException);
  p.text("ValueError");
  p.text("bad\nvalue");
  const std::string line = f.format(EventKind::kCallException, 0, f.names.add("f"), &p);
  EXPECT_NE(line.find("\"type\":\"function_call (post) (exception)\""), std::string::npos);
  EXPECT_NE(line.find("\"exception\":\"ValueError\",\"exception_msg\":\"bad\\nvalue\""), std::string::npos)
      << line;
}

TEST(EventFormatter, TensorTypeNamesFollowTheOriginal) {
  EXPECT_EQ(tensor_type_name("torch.float16", true), "torch.cuda.HalfTensor");
  EXPECT_EQ(tensor_type_name("torch.int64", false), "torch.LongTensor");
  EXPECT_EQ(tensor_type_name("torch.float8_e4m3fn", false), "torch.Tensor");
}

TEST(EventFormatter, VarStateRecordCarriesDigestsAttributesAndOptionalModeAndDumpLoc) {
  Fixture f;
  const uint32_t name = f.names.add("model.fc1.weight");
  PayloadEncoder p;
  p.section(SectionTag::kVarState);
  VarStateHeader v{};
  v.var_type_id = f.names.add("torch.nn.Parameter");
  v.mode_id = f.names.add("selective-sample");
  v.dump_loc_id = f.names.add("torch.optim.optimizer.Optimizer.zero_grad");
  v.flags = kVarHasDataDigest | kVarHasGradDigest | kVarHasUserAttributes;
  v.data_digest = -5;
  v.grad_digest = 7;
  v.tensor = TensorSummary{f.names.add("torch.float32"),
                           kTensorIsCpu | kTensorIsLeaf | kTensorRequiresGrad | kTensorIsParameter | kTensorHasGrad,
                           1, 4, 0, 11, 22};
  p.raw(&v, sizeof v);
  const int64_t dim = 3;
  p.raw(&dim, sizeof dim);
  size_t dict = p.begin_container(ValueTag::kDict);
  p.text("tensor_model_parallel");
  p.boolean(true);
  p.end_container(dict, 1);

  std::vector<std::byte> event(align8(sizeof(EventHeader) + p.size()));
  EventHeader h{static_cast<uint32_t>(event.size()), EventKind::kVarState, 0, 0, name, f.meta_id, 500, 500, 0, 1};
  std::memcpy(event.data(), &h, sizeof h);
  std::memcpy(event.data() + sizeof h, p.data(), p.size());
  std::string line;
  format_event(line, event.data(), f.ctx);
  EXPECT_EQ(line.rfind("{\"var_name\":\"model.fc1.weight\",\"var_type\":\"torch.nn.Parameter\","
                       "\"mode\":\"selective-sample\",\"dump_loc\":\"torch.optim.optimizer.Optimizer.zero_grad\","
                       "\"process_id\":42,\"thread_id\":7,",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("\"type\":\"state_change\",\"attributes\":{\"_TRAINCHECK_data_ID\":11,\"data\":-5,"
                      "\"_TRAINCHECK_grad_ID\":22,\"dtype\":\"torch.float32\",\"grad\":7,"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("\"shape\":[3],\"tensor_model_parallel\":true},\"time\":500}\n"), std::string::npos) << line;
}

TEST(EventFormatter, SamplerVarStateHasNoModeAndNullGradWithoutDigest) {
  Fixture f;
  PayloadEncoder p;
  p.section(SectionTag::kVarState);
  VarStateHeader v{};
  v.var_type_id = f.names.add("torch.nn.Parameter");
  v.flags = kVarHasDataDigest;
  v.data_digest = 1;
  v.tensor = TensorSummary{f.names.add("torch.float32"), kTensorIsCpu, 0, 4, 0, 1, 0};
  p.raw(&v, sizeof v);
  std::vector<std::byte> event(align8(sizeof(EventHeader) + p.size()));
  EventHeader h{static_cast<uint32_t>(event.size()), EventKind::kVarState, 0, 0, f.names.add("w"), f.meta_id, 9, 9, 0, 1};
  std::memcpy(event.data(), &h, sizeof h);
  std::memcpy(event.data() + sizeof h, p.data(), p.size());
  std::string line;
  format_event(line, event.data(), f.ctx);
  EXPECT_EQ(line.find("\"mode\""), std::string::npos);
  EXPECT_EQ(line.find("\"dump_loc\""), std::string::npos);
  EXPECT_NE(line.find("\"grad\":null"), std::string::npos) << line;
  EXPECT_NE(line.find("\"shape\":[]"), std::string::npos) << line;
}
