// qgpu/circuit/tests/frontend_spec_test.cpp — the front end's shape and refusals (circuit/frontend.h),
// torch-free: heads per layer counted by hand from the header's budget, the fields the ROM keys need
// consecutive, and the configs it refuses.
#include <gtest/gtest.h>

#include "circuit/frontend.h"
#include "circuit/config.h"
#include "circuit/tokens.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 1088;  // the front end takes 1,054 dims

model::Qwen35Config config(int layers, int heads, int keyHeadDim) {
  model::Qwen35Config c = linearConfig(kHidden, layers, 1024, 512);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

Expected<FrontEnd> build(const model::Qwen35Config& c) {
  CircuitWeights w(c);
  FieldAllocator alloc(kHidden);
  FrontEndSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  return buildFrontEnd(w, alloc, s);
}

// By hand: L the assembler's 3 taps + the EX latch; L+1 the assembler's 3, the register file's tag
// latch, WM latch and value counter + the op counter, kind latch, prompt-tag latch, the predicate
// file's tag latch; L+2 value thresholds 1..8, op thresholds 1..16, the head-word and BLK latches;
// L+3 the ROM's head and sources banks (512 rows / dk each) + the terminator bank; L+4 4 register
// ports (3 sources, the old dst) × 4 lanes + 4 predicate ports (guard, psrc0, psrc1, dstPred).
TEST(FrontEndSpec, HeadsPerLayerAreTheHeadersBudget) {
  EXPECT_EQ(frontEndHeads(64), (std::vector<int>{4, 10, 8 + 16 + 2, 8 + 8 + 1, 16 + 4}));
  EXPECT_EQ(frontEndHeads(128), (std::vector<int>{4, 10, 26, 4 + 4 + 1, 20}));
}

// MLP units by hand (a cancel is one unit per dim, a constant one unit, an AND two):
//   L    the register file's 77 + the prompt-tag detector (cancel, constant, detector) + the
//        predicate file's reset detector (the same three) = 83
//   L+1  the assembler's 446 + 4 enables × (cancel, constant) + 4 ANDs + the predicate file's
//        write enable (cancel, a constant AND, the AND) = 446 + 8 + 8 + 5 = 467
//   L+2  the register file's 44 + j (4 cancels, constant, 15 ANDs: v = 1..15; v = 0 and 16 show 0)
//        + recordEnd (cancel, constant, 2 + 2 + 15 + 30 ANDs) = 44 + 35 + 100 = 179
//   L+3  3 ports × (r_src: 4 cancels, constant, 4 ANDs; w: 2 cancels, 2 linear) + isOp, isCont
//        (cancel, constant, 1 AND each) + isTerm (cancel, constant, 2 ANDs) = 51 + 8 + 6 = 65
//        + the dst port's key (4 cancels, constant, 4 one-literal ANDs; w: 2 cancels, 2 linear)
//        = 17 + 4 predicate keys × (3 cancels, constant, 7 ANDs: codes 2..8) = 72 + port 0's
//        fallback to the TERM word's branch predicate (7 ANDs: codes 2..8) = 14: 168
//   L+4  the polarity flips: 16 register heads × 32 dims + 4 predicate heads × 8 = 544; exec
//        (cancel, constant, 1 AND) = 548
TEST(FrontEndSpec, BuildUsesExactlyTheBudgetAndConsecutiveKeys) {
  auto fe = build(config(5, 26, 64));
  ASSERT_TRUE(fe.ok()) << fe.error().message;
  const std::vector<int> want = frontEndHeads(64);
  const int units[] = {83, 467, 179, 168, 548};
  for (int l = 0; l < 5; ++l) {
    EXPECT_EQ(fe->heads[l], want[static_cast<size_t>(l)]) << "layer " << l;
    EXPECT_EQ(fe->units[l], units[l]) << "layer " << l;
  }
  // The ROM's read key is j then b; its write key the head word's op bits then the BLK value's b.
  EXPECT_EQ(fe->fetchKey.offset, fe->opIndex.offset);
  EXPECT_EQ(fe->execBlock.offset, fe->opIndex.offset + fe->opIndex.dims);
  EXPECT_EQ(fe->fetchKey.dims, 9);
  EXPECT_EQ(fe->romWriteKey.dims, 9);
  EXPECT_EQ(fe->readKey.size(), 4u);  // 3 sources, the dst
  for (const Field& k : fe->readKey) EXPECT_EQ(k.dims, 6);
}

TEST(FrontEndSpec, RefusesTooFewHeadsOrLayers) {
  auto heads = build(config(5, 25, 64));
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.error().kind, ErrorKind::Usage);
  EXPECT_NE(heads.error().message.find("26 value heads"), std::string::npos) << heads.error().message;
  auto layers = build(config(4, 26, 64));
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.error().message.find("layers 0..4"), std::string::npos) << layers.error().message;
}

}  // namespace
}  // namespace qgpu::circuit
