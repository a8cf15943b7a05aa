// The step claims end to end (record/step_claims.h, relations/step_claims.h): every declared claim has a
// registered relation that reads it, every registered claim relation reads a declared claim, and each
// claim's bit goes from the recorder's event to the trace line, through the reader and the online feed's
// line templates, to the verdict its relation reads. A claim declared but not carried fails here.
#include "relations/step_claims.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "check/online/var_line_templates.h"
#include "record/event_format.h"
#include "record/event_formatter.h"
#include "record/payload_encoder.h"
#include "record/string_table.h"
#include "relations/registry.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

std::vector<const StepClaimRelation*> claim_relations() {
  std::vector<const StepClaimRelation*> out;
  for (const Relation* r : implemented_relations())
    if (const auto* c = dynamic_cast<const StepClaimRelation*>(r)) out.push_back(c);
  return out;
}

const StepClaimRelation* relation_reading(std::string_view attribute) {
  for (const StepClaimRelation* r : claim_relations())
    if (r->attribute() == attribute) return r;
  return nullptr;
}

// A parameter's state line as the recorder writes it at an optimizer step, with `flags`' claims.
std::string state_line(uint32_t flags, uint64_t time) {
  StringTable names, metas;
  const uint32_t meta_id = metas.add("\"stage\":\"training\"");
  FormatContext ctx{names, metas, 42, 7, "0123456789abcdef0123456789abcdef"};
  PayloadEncoder p;
  p.section(SectionTag::kVarState);
  VarStateHeader v{};
  v.var_type_id = names.add("torch.nn.Parameter");
  v.mode_id = names.add("sample");
  v.flags = kVarHasDataDigest | kVarHasGradDigest | flags;
  v.data_digest = 5;
  v.grad_digest = 9;
  v.tensor = TensorSummary{names.add("torch.float32"),
                           kTensorIsCpu | kTensorIsLeaf | kTensorRequiresGrad | kTensorIsParameter | kTensorHasGrad,
                           0, 4, 0, 11, 22};
  p.raw(&v, sizeof v);
  std::vector<std::byte> event(align8(sizeof(EventHeader) + p.size()));
  EventHeader h{static_cast<uint32_t>(event.size()), EventKind::kVarState, 0, 0, names.add("model.fc.weight"),
                meta_id, time, time, 0, 1};
  std::memcpy(event.data(), &h, sizeof h);
  std::memcpy(event.data() + sizeof h, p.data(), p.size());
  std::string line;
  format_event(line, event.data(), ctx);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

bool parse(const std::string& line, Record& out) {
  JsonParser parser;
  std::string padded = line, error;
  padded.append(kJsonPadding, '\0');
  return parse_trace_line(parser, padded.data(), line.size(), out, error);
}

}  // namespace

TEST(StepClaims, EveryDeclaredClaimHasARegisteredRelationReadingIt) {
  for (const StepClaim& claim : kStepClaims)
    EXPECT_NE(relation_reading(claim.attribute), nullptr)
        << claim.name << " is declared in record/step_claims.h but no registered StepClaimRelation reads it";
}

TEST(StepClaims, EveryRegisteredClaimRelationReadsADeclaredClaimOfItsOwn) {
  std::vector<std::string_view> read;
  for (const StepClaimRelation* r : claim_relations()) {
    bool declared = false;
    for (const StepClaim& claim : kStepClaims) declared |= claim.attribute == r->attribute();
    EXPECT_TRUE(declared) << r->name() << " reads " << r->attribute() << ", which record/step_claims.h does not declare";
    for (std::string_view other : read) EXPECT_NE(other, r->attribute()) << "two relations read " << other;
    read.push_back(r->attribute());
  }
  EXPECT_EQ(read.size(), kStepClaimCount);
}

TEST(StepClaims, EachClaimBitReachesItsRelationThroughTheLineAndTheTemplates) {
  for (const StepClaim& claim : kStepClaims) {
    const StepClaimRelation* relation = relation_reading(claim.attribute);
    ASSERT_NE(relation, nullptr) << claim.name;
    VarLineTemplates templates;
    uint64_t time = 1000;
    for (bool holds : {true, false, true}) {
      const uint32_t flags = claim_made_flag(claim.bit) | (holds ? claim_holds_flag(claim.bit) : 0);
      const std::string line = state_line(flags, ++time);
      EXPECT_NE(line.find("\"" + std::string(claim.attribute) + "\":" + (holds ? "true" : "false")),
                std::string::npos)
          << line;
      for (const StepClaim& other : kStepClaims)
        if (other.bit != claim.bit) {
          EXPECT_EQ(line.find("\"" + std::string(other.attribute) + "\":"), std::string::npos) << line;
        }

      Record parsed;
      ASSERT_TRUE(parse(line, parsed)) << line;
      EXPECT_EQ(relation->claim_of(parsed), std::optional<bool>(holds)) << claim.name << ": " << line;
      // The online feed: the first line is learned, the later ones built from its template with the
      // claim's value read from the line.
      Record built;
      if (templates.build(0, line, built)) {
        EXPECT_EQ(relation->claim_of(built), std::optional<bool>(holds)) << claim.name << " (template): " << line;
      } else {
        EXPECT_TRUE(templates.learn(0, line, parsed)) << line;
      }
    }
    EXPECT_EQ(templates.built(), 2u) << claim.name << ": its attribute is not a template's varying field";
  }
}

TEST(StepClaims, ARecordWithoutTheClaimMakesNone) {
  Record parsed;
  ASSERT_TRUE(parse(state_line(0, 5), parsed));
  for (const StepClaimRelation* r : claim_relations()) EXPECT_EQ(r->claim_of(parsed), std::nullopt) << r->name();
}
