// qgpu/circuit/tests/tap_test.cpp — the torch-free checks of the one-row heads (circuit/tap.h) and
// the clamped AND (circuit/assembler.h): where the conv taps and absence channels land, and what
// is refused. Their numerics run through model/ in assembler_test and emit_test.
#include <gtest/gtest.h>

#include <cmath>

#include "circuit/assembler.h"
#include "circuit/tap.h"
#include "circuit/tokens.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config oneLayer() {
  return linearConfig(64, 1, 8, 16);
}

TapSpec spec() {
  TapSpec s;
  s.ballast = {"ballast", 0, 4};
  s.sources = {0, 4, 5, 6, 7, 8, 9, 10};  // present + 7 bits: V = 8, dv/V = 16
  s.out = {"out", 20, 8};
  s.tap = 2;
  return s;
}

float conv(const CircuitWeights& w, int64_t ch, int tap) {
  return w.get(w.layerTensor(0, "linear_attn.conv1d.weight"), ch, tap).value();
}

TEST(TapHead, ValueRailsPickTheTapAndAbsenceChannelsReadNowMinusTwiceTheTap) {
  CircuitWeights w(oneLayer());
  auto m = buildTap(w, spec());
  ASSERT_TRUE(m.ok()) << m.error().message;
  const int64_t v = 2 * 128;  // value channels start after q and k (one key head)
  // Tap 2 is conv index K−1−2 = 1; the current token is index 3.
  EXPECT_EQ(conv(w, v + 0, 1), 1.0f);
  EXPECT_EQ(conv(w, v + 0, 3), 0.0f);
  EXPECT_EQ(conv(w, v + 2 * 8, 3), 1.0f);   // absence channel 0: +1 now
  EXPECT_EQ(conv(w, v + 2 * 8, 1), -2.0f);  // −2 at the tap
  EXPECT_EQ(m.value().keyOn, 128.0);        // λ = 1, G = 128
  EXPECT_EQ(m.value().readUnit, 32.0);      // a hot 0 rail adds −2u: c = 32/(4·1·32) = 1/4
  EXPECT_EQ(m.value().readUnitError, 0.0);
  // Over the pad (HeadPrior::Pad): out_j = −c·(0 rail + absence channel); the 1 rail adds nothing.
  const std::string out = w.layerTensor(0, "linear_attn.out_proj.weight");
  EXPECT_EQ(w.get(out, 20, 0).value(), 0.0f);       // bit 0's 1 rail
  EXPECT_EQ(w.get(out, 20, 1).value(), -0.25f);     // bit 0's 0 rail
  EXPECT_EQ(w.get(out, 20, 2 * 8).value(), -0.25f); // bit 0's absence channel
  EXPECT_EQ(w.get(out, 21, 1).value(), 0.0f);       // bit 1 reads only its own channels
  TapSpec zero = spec();
  zero.padding = Padding::Zero;
  zero.prior = HeadPrior::Zero;
  CircuitWeights wz(oneLayer());
  auto mz = buildTap(wz, zero);
  ASSERT_TRUE(mz.ok()) << mz.error().message;
  EXPECT_EQ(conv(wz, v + 2 * 8, 3), 0.0f);  // the twin has no absence channels
  // Over zero dims: out_j = (c/2)·(1 rail − 0 rail) = ±u.
  const std::string outZ = wz.layerTensor(0, "linear_attn.out_proj.weight");
  EXPECT_EQ(wz.get(outZ, 20, 0).value(), 0.125f);
  EXPECT_EQ(wz.get(outZ, 20, 1).value(), -0.125f);
  EXPECT_EQ(wz.get(outZ, 20, 2 * 8).value(), 0.0f);
  EXPECT_EQ(mz.value().readUnit, 16.0);
}

TEST(Latch, KeysTheEnabledRowAndWritesOverThePad) {
  CircuitWeights w(oneLayer());
  LatchSpec s;
  s.ballast = {"ballast", 0, 4};
  s.enable = 5;
  s.sources = {6, 7};  // V = 2, dv/V = 64
  s.out = {"out", 20, 2};
  auto m = buildLatch(w, s);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::string qkv = w.layerTensor(0, "linear_attn.in_proj_qkv.weight");
  const int64_t k = 128;  // key channels follow the 128 query channels
  // Key head dim 128 (tap.h "The read height"): a 4-hot key on rows 0..3 when enabled, the
  // scratch rows 4..7 otherwise; the query on rows 0 and 1 at 128 and 128 + 3·2^-16 (the
  // second row's 3·2^-16 on the next ballast dim); value rails at h = 256.
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(w.get(qkv, k + r, 5).value(), 128.0f) << r;
    EXPECT_EQ(w.get(qkv, k + 4 + r, 5).value(), -128.0f) << r;
  }
  EXPECT_EQ(w.get(qkv, k + 8, 5).value(), 0.0f);
  EXPECT_EQ(w.get(qkv, 0, 0).value(), 128.0f);
  EXPECT_EQ(w.get(qkv, 1, 0).value(), 128.0f);
  EXPECT_EQ(w.get(qkv, 1, 1).value(), std::ldexp(3.0f, -16));
  EXPECT_EQ(w.get(qkv, 2, 0).value(), 0.0f);
  EXPECT_EQ(w.get(qkv, 2 * 128, 6).value(), 256.0f);
  EXPECT_EQ(w.get(qkv, 2 * 128 + 1, 6).value(), -256.0f);
  EXPECT_EQ(m.value().read.keyRows, 4);
  EXPECT_EQ(m.value().read.read, 16.0f);
  // Key head dim 64: one row, as before (row 0 / scratch row 1, query row 0, rails at 128).
  model::Qwen35Config c64 = oneLayer();
  c64.linearKeyHeadDim = 64;
  CircuitWeights w64(c64);
  auto m64 = buildLatch(w64, s);
  ASSERT_TRUE(m64.ok()) << m64.error().message;
  const int64_t k64 = 64;
  EXPECT_EQ(w64.get(qkv, k64, 5).value(), 128.0f);
  EXPECT_EQ(w64.get(qkv, k64 + 1, 5).value(), -128.0f);
  EXPECT_EQ(w64.get(qkv, k64 + 2, 5).value(), 0.0f);
  EXPECT_EQ(w64.get(qkv, 0, 0).value(), 128.0f);
  EXPECT_EQ(w64.get(qkv, 1, 0).value(), 0.0f);
  EXPECT_EQ(w64.get(qkv, 2 * 64, 6).value(), 128.0f);
  EXPECT_EQ(m64.value().read.keyRows, 1);
  const int64_t v = 2 * 128;
  EXPECT_EQ(conv(w, v + 0, 3), 1.0f);  // values from the current token
  EXPECT_EQ(conv(w, v + 0, 2), 0.0f);
  // c = 2u/(√64·λGz) = 32/(8·32) = 1/8 on the 0 rail only.
  const std::string out = w.layerTensor(0, "linear_attn.out_proj.weight");
  EXPECT_EQ(w.get(out, 20, 1).value(), -0.125f);
  EXPECT_EQ(w.get(out, 20, 0).value(), 0.0f);
  EXPECT_EQ(m.value().readUnitError, 0.0);
}

TEST(TapHead, ReportsTheReadSizeWhenLambdaIsNotAPowerOfTwo) {
  CircuitWeights w(oneLayer());
  TapSpec s = spec();
  s.lambda = normLambda(88, 256);  // 1.7056: c is rounded to bf16
  auto m = buildTap(w, s);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_GT(m.value().readUnitError, 0.0);
  EXPECT_LT(m.value().readUnitError, 1.0 / 256);
  EXPECT_TRUE(w.checkBf16Exact().ok());
}

TEST(TapHead, RefusesTapsOutsideTheWindowBadWidthsAndLowGains) {
  for (int tap : {0, 4}) {
    CircuitWeights w(oneLayer());
    TapSpec s = spec();
    s.tap = tap;
    EXPECT_EQ(buildTap(w, s).error().kind, ErrorKind::Usage) << tap;
  }
  CircuitWeights w(oneLayer());
  TapSpec seven = spec();
  seven.sources.pop_back();  // V = 7: 128/7 is not a power of 4
  seven.out.dims = 7;
  EXPECT_EQ(buildTap(w, seven).error().kind, ErrorKind::Usage);
  TapSpec weak = spec();
  weak.gain = weak.valueGain = 64;  // λG = 64 < 89
  EXPECT_EQ(buildTap(w, weak).error().kind, ErrorKind::OverLimit);
  TapSpec head = spec();
  head.head = 1;
  EXPECT_EQ(buildTap(w, head).error().kind, ErrorKind::Usage);
  LatchSpec latch;
  latch.ballast = {"ballast", 0, 4};
  latch.enable = 5;
  latch.sources = {6, 7, 8};  // V = 3
  latch.out = {"out", 20, 3};
  EXPECT_EQ(buildLatch(w, latch).error().kind, ErrorKind::Usage);
}

TEST(ClampedAnd, WritesTwoUnitsRefusesLowGainAndSkipsContradictions) {
  CircuitWeights w(oneLayer());
  UnitWriter units(w, 0);
  AndGate g{{"ballast", 0, 4}, 2.0, 128};
  auto two = addAnd(units, g, {{10, 1}, {11, -1}, {10, 1}}, {{30, 32.0}});
  ASSERT_TRUE(two.ok() && two.value()) << (two.ok() ? "" : two.error().message);
  EXPECT_EQ(units.used(), 2);
  const std::string gate = w.layerTensor(0, "mlp.gate_proj.weight");
  EXPECT_EQ(w.get(gate, 0, 10).value(), 128.0f);  // the duplicate merged, not doubled
  EXPECT_EQ(w.get(gate, 0, 11).value(), -128.0f);
  EXPECT_EQ(w.get(gate, 0, 0).value(), -128.0f * 0.5f);  // −G(n − 1.5), n = 2
  EXPECT_EQ(w.get(gate, 1, 0).value(), -128.0f * 1.5f);  // −G(n − 0.5)
  // down = 32/(Gλ²) = 1/16, with opposite signs on the pair.
  const std::string down = w.layerTensor(0, "mlp.down_proj.weight");
  EXPECT_EQ(w.get(down, 30, 0).value(), 0.0625f);
  EXPECT_EQ(w.get(down, 30, 1).value(), -0.0625f);
  auto never = addAnd(units, g, {{10, 1}, {10, -1}}, {{30, 32.0}});
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never.value());
  EXPECT_EQ(units.used(), 2);
  AndGate weak{{"ballast", 0, 4}, 1.0, 128};  // Gλ = 128 < 178
  EXPECT_EQ(addAnd(units, weak, {{10, 1}}, {{30, 32.0}}).error().kind, ErrorKind::OverLimit);
}

TEST(Assembler, RefusesATokenLayoutPlannedForAnotherHiddenSize) {
  CircuitWeights w(linearConfig(64, 2, 8, 16));
  FieldAllocator alloc(256);
  AssemblerSpec s;
  s.tokens = planTokenLayout(alloc, 256).value();  // the config has 64 dims
  auto a = buildAssembler(w, alloc, s);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::circuit
