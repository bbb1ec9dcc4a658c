// qgpu/circuit/tests/tap_test.cpp — the torch-free checks of the one-row heads (circuit/tap.h) and
// the clamped AND (circuit/assembler.h): where the conv taps and absence channels land, and what
// is refused. Their numerics run through model/ in assembler_test and emit_test.
#include <gtest/gtest.h>

#include "circuit/assembler.h"
#include "circuit/tap.h"
#include "circuit/tests/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config oneLayer() {
  return testing::linearConfig(64, 1, 8, 16);
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
  EXPECT_EQ(m.value().keyOn, 128.0);        // λ = 2, G = 64
  EXPECT_EQ(m.value().readUnit, 16.0);      // c = 16/(4·2·16) = 1/8 is bf16-exact
  EXPECT_EQ(m.value().readUnitError, 0.0);
  TapSpec zero = spec();
  zero.padding = Padding::Zero;
  CircuitWeights wz(oneLayer());
  ASSERT_TRUE(buildTap(wz, zero).ok());
  EXPECT_EQ(conv(wz, v + 2 * 8, 3), 0.0f);  // the twin has no absence channels
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
  weak.gain = weak.valueGain = 32;  // λG = 64 < 89
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

}  // namespace
}  // namespace qgpu::circuit
