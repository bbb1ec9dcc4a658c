// qgpu/circuit/tests/operands_spec_test.cpp — the operand select's shape and refusals
// (circuit/operands.h), torch-free: heads and units per layer counted by hand from the header's
// budget, the operand words the register file's own fields, and the configs it refuses.
#include <gtest/gtest.h>

#include "circuit/frontend.h"
#include "circuit/operands.h"
#include "circuit/config.h"
#include "circuit/tokens.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 1152;  // the front end and the select take 1,094 dims

model::Qwen35Config config(int heads, int keyHeadDim) {
  model::Qwen35Config c = linearConfig(kHidden, 5, 1024, 512);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Built {
  Expected<FrontEnd> fe;
  Expected<Operands> op;
};

Built build(const model::Qwen35Config& c, bool payloadBanks) {
  CircuitWeights w(c);
  FieldAllocator alloc(kHidden);
  FrontEndSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  s.payloadBanks = payloadBanks;
  Built b{buildFrontEnd(w, alloc, s), makeDiag(ErrorKind::Usage, "front end not built")};
  if (!b.fe.ok()) return b;
  OperandsSpec os;
  os.tokens = s.tokens;
  b.op = buildOperands(w, alloc, b.fe.value(), os);
  return b;
}

// By hand: the front end's {4, 10, 26, 2·(512/dk) + 1, 20} with the payload banks' 4·(512/dk) more
// at L+3, plus this stage's CTA counter (L), PROG-tag latch (L+1), two launch latches (L+2) and
// 15 CTA thresholds (L+4).
TEST(OperandsSpec, HeadsPerLayerAreTheHeadersBudget) {
  EXPECT_EQ(frontEndHeads(64, true), (std::vector<int>{4, 10, 26, 6 * 8 + 1, 20}));
  EXPECT_EQ(operandStageHeads(64), (std::vector<int>{5, 11, 28, 49, 35}));
  EXPECT_EQ(operandStageHeads(128), (std::vector<int>{5, 11, 28, 6 * 4 + 1, 35}));
}

// Units by hand (a cancel one unit per dim, a constant one, an AND two):
//   front end L+1: 467 + 4 payload enables × (cancel, constant, AND) = 467 + 16 = 483
//   L+1 progEnable: cancel, constant, AND = 4
//   L+4 per source: Imm 32 ANDs, tid 2 + 2, laneid 2, warpid 2, ntid 5, nctaid 5, ctaid 15 =
//       65 ANDs = 130 units; three sources 390
TEST(OperandsSpec, BuildUsesExactlyTheBudget) {
  const Built b = build(config(49, 64), true);
  ASSERT_TRUE(b.fe.ok()) << b.fe.error().message;
  ASSERT_TRUE(b.op.ok()) << b.op.error().message;
  EXPECT_EQ(b.fe->units[1], 483);
  const int heads[] = {1, 1, 2, 0, 15};
  const int units[] = {0, 4, 0, 0, 390};
  for (int l = 0; l < 5; ++l) {
    EXPECT_EQ(b.op->heads[l], heads[l]) << "layer " << l;
    EXPECT_EQ(b.op->units[l], units[l]) << "layer " << l;
  }
  // The words are the register file's operand fields (the layout the ALU stage reads).
  ASSERT_EQ(b.op->word.size(), 3u);
  for (size_t k = 0; k < 3; ++k)
    for (size_t l = 0; l < 4; ++l) {
      EXPECT_EQ(b.op->word[k][l].offset, b.fe->rf.operand[k][l].offset);
      EXPECT_EQ(b.op->word[k][l].dims, 32);
    }
  EXPECT_EQ(b.op->ctaAtLeast.dims, 15);
}

// The front end's own budget is unchanged without the flag (its tests keep their figures).
TEST(OperandsSpec, PayloadBanksOffKeepsTheFrontEndsBudget) {
  EXPECT_EQ(frontEndHeads(64), (std::vector<int>{4, 10, 26, 17, 20}));
  auto c = config(26, 64);
  CircuitWeights w(c);
  FieldAllocator alloc(kHidden);
  FrontEndSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  auto fe = buildFrontEnd(w, alloc, s);
  ASSERT_TRUE(fe.ok()) << fe.error().message;
  EXPECT_EQ(fe->heads[3], 17);
  EXPECT_EQ(fe->units[1], 467);
}

TEST(OperandsSpec, RefusesAFrontEndWithoutPayloadBanks) {
  const Built b = build(config(49, 64), false);
  ASSERT_TRUE(b.fe.ok()) << b.fe.error().message;
  ASSERT_FALSE(b.op.ok());
  EXPECT_EQ(b.op.error().kind, ErrorKind::Usage);
  EXPECT_NE(b.op.error().message.find("payloadBanks"), std::string::npos) << b.op.error().message;
}

TEST(OperandsSpec, RefusesTooFewHeads) {
  // 48 heads: the front end's payload-banked ROM (49 at L+3) does not fit.
  const Built b = build(config(48, 64), true);
  ASSERT_FALSE(b.fe.ok());
  EXPECT_EQ(b.fe.error().kind, ErrorKind::Usage);
  // dk 128: the front end fits in 25 heads, the stage needs 27 at L+4 and 28 at L+2.
  const Built c = build(config(27, 128), true);
  ASSERT_TRUE(c.fe.ok()) << c.fe.error().message;
  ASSERT_FALSE(c.op.ok());
  EXPECT_EQ(c.op.error().kind, ErrorKind::Usage);
  EXPECT_NE(c.op.error().message.find("28"), std::string::npos) << c.op.error().message;
}

}  // namespace
}  // namespace qgpu::circuit
