#include "invariant/precondition.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace traincheck;

namespace {

// Records built directly from fields.
Record rec(std::initializer_list<std::pair<std::string_view, Value>> fields) {
  Record r;
  for (const auto& [k, v] : fields) r.set(intern_key(k), v);
  r.refresh_cached();
  return r;
}

std::vector<RecordView> views(const std::vector<Record>& rs) {
  std::vector<RecordView> out;
  for (const Record& r : rs) out.push_back(RecordView{&r, nullptr});
  return out;
}

const Value kTraining = Value::string("training");

}  // namespace

TEST(Clause, ConstantNeedsOneSharedValueFromTheList) {
  Clause c = Clause::make(ClauseType::Constant, "meta_vars.stage", "str", {kTraining, Value::string("testing")});
  std::vector<Record> same = {rec({{"meta_vars.stage", kTraining}}), rec({{"meta_vars.stage", kTraining}})};
  std::vector<Record> mixed = {rec({{"meta_vars.stage", kTraining}}), rec({{"meta_vars.stage", Value::string("testing")}})};
  std::vector<Record> other = {rec({{"meta_vars.stage", Value::string("init")}})};
  std::vector<Record> missing = {rec({{"meta_vars.step", Value::integer(1)}})};
  EXPECT_TRUE(c.holds(views(same)));
  EXPECT_FALSE(c.holds(views(mixed)));
  EXPECT_FALSE(c.holds(views(other)));
  EXPECT_FALSE(c.holds(views(missing)));
  // Numeric values match across int and float (invariant files carry 2.0 for ints).
  Clause ndim = Clause::make(ClauseType::Constant, "attributes.ndim", "float", {Value::real(2.0)});
  EXPECT_TRUE(ndim.holds(views({rec({{"attributes.ndim", Value::integer(2)}})})));
  // None is a value a constant can hold; NaN is never a value.
  Clause none = Clause::make(ClauseType::Constant, "attributes.grad", "MD_NONE", {Value::null()});
  EXPECT_TRUE(none.holds(views({rec({{"attributes.grad", Value::null()}})})));
  EXPECT_FALSE(none.holds(views({rec({{"attributes.grad", Value::real(std::nan(""))}})})));
}

TEST(Clause, ConsistentUnequalAndExist) {
  Clause consistent = Clause::make(ClauseType::Consistent, "meta_vars.step", "int");
  Clause unequal = Clause::make(ClauseType::Unequal, "process_id", "int");
  Clause exist = Clause::make(ClauseType::Exist, "attributes.shape", "None");
  std::vector<Record> a = {rec({{"meta_vars.step", Value::integer(3)}, {"process_id", Value::integer(1)},
                                {"attributes.shape", Value::array({Value::integer(2)})}}),
                           rec({{"meta_vars.step", Value::real(3.0)}, {"process_id", Value::integer(2)},
                                {"attributes.shape", Value::array({Value::integer(2)})}})};
  EXPECT_TRUE(consistent.holds(views(a)));
  EXPECT_TRUE(unequal.holds(views(a)));
  EXPECT_TRUE(exist.holds(views(a)));  // exist accepts unhashable values
  std::vector<Record> b = {rec({{"meta_vars.step", Value::integer(3)}, {"process_id", Value::integer(1)}}),
                           rec({{"meta_vars.step", Value::integer(4)}, {"process_id", Value::integer(1)}})};
  EXPECT_FALSE(consistent.holds(views(b)));
  EXPECT_FALSE(unequal.holds(views(b)));
  EXPECT_FALSE(exist.holds(views(b)));
  // Unhashable values fail every clause but exist.
  Clause shape_consistent = Clause::make(ClauseType::Consistent, "attributes.shape", "list");
  EXPECT_FALSE(shape_consistent.holds(views(a)));
}

TEST(Clause, AdditionalPathReachesIntoContextManagerArguments) {
  const std::string cm = "meta_vars.context_managers.torch.amp.autocast_mode.autocast";
  Clause dtype = Clause::make(ClauseType::Constant, cm, "str", {Value::string("torch.float16")}, Value::array({Value::string("dtype")}));
  Record r;
  r.set(intern_key("function"), Value::string("f"));
  std::vector<Field> extra = {{intern_key(cm), make_object({{"dtype", Value::string("torch.float16")}})}};
  std::vector<RecordView> v = {RecordView{&r, &extra}};
  EXPECT_TRUE(dtype.holds(v));
  std::vector<Field> other = {{intern_key(cm), make_object({{"dtype", Value::string("torch.bfloat16")}})}};
  EXPECT_FALSE(dtype.holds(std::vector<RecordView>{RecordView{&r, &other}}));
  EXPECT_FALSE(dtype.holds(std::vector<RecordView>{RecordView{&r, nullptr}}));
}

TEST(PreconditionGroup, DisjunctionUnconditionalAndInverted) {
  std::vector<Record> training = {rec({{"meta_vars.stage", kTraining}})};
  PreconditionGroup empty;
  EXPECT_FALSE(empty.holds(views(training)));  // empty OR is false
  EXPECT_TRUE(PreconditionGroup::unconditional().holds(views(training)));
  PreconditionGroup g;
  g.disjuncts.push_back(Conjunction{false, {Clause::make(ClauseType::Constant, "meta_vars.stage", "str", {Value::string("init")})}});
  g.disjuncts.push_back(Conjunction{false, {}});  // an empty conjunction is true
  EXPECT_TRUE(g.holds(views(training)));
  g.inverted = true;
  EXPECT_FALSE(g.holds(views(training)));
}

TEST(StageInfo, AddedToConjunctionsOrAsInvalidStagesForInvertedGroups) {
  PreconditionGroup g = PreconditionGroup::unconditional();
  add_stage_info(g, {"training"});
  ASSERT_EQ(g.disjuncts.size(), 1u);
  EXPECT_FALSE(g.disjuncts[0].unconditional);
  EXPECT_TRUE(g.holds(views({rec({{"meta_vars.stage", kTraining}})})));
  EXPECT_FALSE(g.holds(views({rec({{"meta_vars.stage", Value::string("testing")}})})));

  PreconditionGroup inv;
  inv.inverted = true;
  inv.disjuncts.push_back(Conjunction{false, {Clause::make(ClauseType::Constant, "meta_vars.step", "int", {Value::integer(0)})}});
  add_stage_info(inv, {"training"});
  ASSERT_EQ(inv.disjuncts.size(), 2u);
  EXPECT_TRUE(inv.holds(views({rec({{"meta_vars.stage", kTraining}, {"meta_vars.step", Value::integer(3)}})})));
  EXPECT_FALSE(inv.holds(views({rec({{"meta_vars.stage", Value::string("testing")}, {"meta_vars.step", Value::integer(3)}})})));
  EXPECT_FALSE(inv.holds(views({rec({{"meta_vars.stage", kTraining}, {"meta_vars.step", Value::integer(0)}})})));
}
