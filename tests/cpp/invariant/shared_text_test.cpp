#include "invariant/shared_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "relations/function_order.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

// A text and the plain string it stands for, built piece by piece.
struct Built {
  SharedText text;
  std::string plain;
};

Built build(const std::vector<std::pair<bool, std::string>>& pieces) {
  Built b;
  for (const auto& [is_name, piece] : pieces) {
    if (is_name) b.text += Name(piece);
    else b.text += piece;
    b.plain += piece;
  }
  return b;
}

}  // namespace

TEST(SharedText, ReadsAsTheStringItStandsFor) {
  const Built b = build({{true, "torch.A"}, {false, " is called before "}, {true, "torch.B"}});
  EXPECT_EQ(b.text.str(), "torch.A is called before torch.B");
  EXPECT_EQ(b.text, "torch.A is called before torch.B");
  EXPECT_FALSE(b.text == "torch.A is called before torch.");
  EXPECT_FALSE(b.text == "torch.A is called before torch.BB");
  EXPECT_EQ(b.text.size(), b.plain.size());
  EXPECT_EQ(b.text.own_size(), std::string(" is called before ").size());
  std::ostringstream out;
  out << b.text;
  EXPECT_EQ(out.str(), b.plain);
  SharedText joined = SharedText("x: ") + b.text;
  joined += b.text;
  EXPECT_EQ(joined, "x: " + b.plain + b.plain);
  EXPECT_EQ(SharedText("plain"), SharedText() + Name("plain"));
}

TEST(SharedText, OrdersAsTheAssembledStrings) {
  // Pieces from a tiny alphabet, so that texts share long prefixes across piece boundaries.
  std::mt19937 rng(7);
  std::vector<Built> texts;
  for (int i = 0; i < 300; ++i) {
    std::vector<std::pair<bool, std::string>> pieces;
    for (int n = static_cast<int>(rng() % 4); n >= 0; --n) {
      std::string piece;
      for (int k = static_cast<int>(rng() % 3); k >= 0; --k) piece += "ab"[rng() % 2];
      pieces.emplace_back(rng() % 2 == 0, piece);
    }
    texts.push_back(build(pieces));
  }
  for (const Built& x : texts)
    for (const Built& y : texts) {
      ASSERT_EQ(x.text < y.text, x.plain < y.plain) << x.plain << " vs " << y.plain;
      ASSERT_EQ(x.text == y.text, x.plain == y.plain) << x.plain << " vs " << y.plain;
    }
}

// Issue 24: a hypothesis per pair of functions held each long name in its params and its description.
TEST(SharedText, HypothesesOfLongNamesHoldTheNamesOnce) {
  const std::string a = "torch.a_" + std::string(4000, 'x'), b = "torch.b_" + std::string(4000, 'y');
  std::string text;
  int64_t time = 1;
  for (int step = 0; step < 3; ++step)
    for (const std::string& fn : {a, b})
      for (const char* kind : {"pre", "post"})
        text += "{\"func_call_id\":\"" + std::to_string(step) + fn.substr(6, 1) + "\",\"thread_id\":1,\"process_id\":1,"
                "\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"stage\":\"training\"},\"type\":\"function_call (" +
                kind + ")\",\"function\":\"" + fn + "\",\"is_bound_method\":false,\"obj_id\":null,\"args\":{},\"kwargs\":{},"
                "\"time\":" + std::to_string(time++) + "}\n";
  const TraceStore trace("t", read_trace_text("t", text));
  const std::vector<Hypothesis> hs = FunctionOrderRelation(FunctionOrder::Cover).generate(trace);
  ASSERT_EQ(hs.size(), 2u);  // [a, b] and [b, a]
  for (const Hypothesis& h : hs) {
    EXPECT_GT(h.invariant.text_description.size(), 8000u);
    EXPECT_LT(h.invariant.text_description.own_size(), 100u);
    EXPECT_LT(h.invariant.compact_identity().size(), 200u);  // inference merges hypotheses by it
  }
  // One stored text per name, whichever hypothesis names it.
  EXPECT_EQ(&hs[0].invariant.params[0].api_full_name.str(), &hs[1].invariant.params[1].api_full_name.str());
  EXPECT_EQ(hs[0].invariant.params[0].api_full_name, a);
}
