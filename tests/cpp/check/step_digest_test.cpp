// A step's digest (check/online/step_digest.h): replicas in sync have equal ones whatever their rank's own
// identity and their records' field order; any compared content changes it.
#include "check/online/step_digest.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

Record record(int rank, int64_t data, const std::string& name = "model.0.weight", const std::string& stage = "training") {
  const std::string line = "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":" +
                           std::to_string(100 + rank) + ",\"thread_id\":" + std::to_string(7 + rank) +
                           ",\"meta_vars\":{\"step\":3,\"stage\":\"" + stage + "\",\"_DATA_PARALLEL_RANK\":" + std::to_string(rank) +
                           "},\"type\":\"state_change\",\"attributes\":{\"data\":" + std::to_string(data) +
                           ",\"shape\":[2,4],\"nbytes\":32},\"time\":" + std::to_string(1000 + rank) + "}\n";
  return read_trace_text("test", line).records.at(0);
}

StepDigester digester() {
  std::vector<KeyId> kept;
  for (const char* f : {"type", "process_id", "thread_id", "time", "var_name", "var_type", "meta_vars.step", "meta_vars.stage",
                        "meta_vars._DATA_PARALLEL_RANK", "attributes.data", "attributes.shape", "attributes._TRAINCHECK_data_ID"})
    kept.push_back(intern_key(f));
  return StepDigester(kept);
}

}  // namespace

TEST(StepDigest, ReplicasOfOneVariableHaveOneDigestWhateverTheirRank) {
  const StepDigester d = digester();
  EXPECT_EQ(d.of(record(0, 42)), d.of(record(1, 42)));
}

TEST(StepDigest, ComparedContentChangesIt) {
  const StepDigester d = digester();
  const uint64_t base = d.of(record(0, 42));
  EXPECT_NE(base, d.of(record(0, 43)));                          // the value
  EXPECT_NE(base, d.of(record(0, 42, "model.1.weight")));        // the variable
  EXPECT_NE(base, d.of(record(0, 42, "model.0.weight", "eval")));  // the stage
}

TEST(StepDigest, FieldsTheSummaryLeavesOutDoNotCount) {
  // nbytes is not among the kept fields: a summary would not carry it, so neither does the digest.
  const StepDigester d = digester();
  Record other = record(0, 42);
  other.set(intern_key("attributes.nbytes"), Value::integer(64));
  EXPECT_EQ(d.of(record(0, 42)), d.of(other));
}

TEST(StepDigest, AStepsDigestIsTheSameInAnyOrderAndCountsItsVariables) {
  const StepDigester d = digester();
  const uint64_t a = d.of(record(0, 1, "a")), b = d.of(record(0, 2, "b"));
  EXPECT_EQ(StepDigester::combine({a, b}), StepDigester::combine({b, a}));
  EXPECT_NE(StepDigester::combine({a, b}), StepDigester::combine({a}));
  EXPECT_NE(StepDigester::combine({a, a}), StepDigester::combine({}));
}

TEST(StepDigest, ValuesOfTwoKindsNeverMeetByTheirBits) {
  // Regression (review): an int i and the double whose bits are i ^ 1 once hashed alike (1 and 0.0).
  const StepDigester d = digester();
  Record as_double = record(0, 0);
  as_double.set(intern_key("attributes.data"), Value::real(0.0));
  EXPECT_NE(d.of(record(0, 1)), d.of(as_double));
}

TEST(StepDigest, ArraysAreHashedValueByValueNotAsJsonText) {
  // As JSON text an infinity, a NaN and null were all "null": [inf] and [null] were one digest.
  const StepDigester d = digester();
  auto with_shape = [&](Value element) {
    Record r = record(0, 42);
    r.set(intern_key("attributes.shape"), Value::array({std::move(element)}));
    return d.of(r);
  };
  EXPECT_NE(with_shape(Value::real(std::numeric_limits<double>::infinity())), with_shape(Value::null()));
  EXPECT_NE(with_shape(Value::real(std::numeric_limits<double>::quiet_NaN())), with_shape(Value::null()));
  EXPECT_EQ(with_shape(Value::integer(4)), with_shape(Value::integer(4)));
}
