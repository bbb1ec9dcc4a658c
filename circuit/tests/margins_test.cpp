// qgpu/circuit/tests/margins_test.cpp — measureMargins (circuit/margins.h) on hand-written taps:
// what it pins down —
//   - decision units are the rows with a nonzero weight (dead rows' values are ignored, whatever
//     they hold);
//   - each value is classified by R2's thresholds: exactly 0, off (≤ −88.8), on (≥ 17), or in
//     band, and the first in-band value is named by position and unit;
//   - sign fields report |x|/u and count every dim that is not exactly ±u;
//   - taps that do not fit the config are Usage errors, not crashes.
#include <gtest/gtest.h>

#include "circuit/margins.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Activation tap(const char* name, int layer, int64_t rows, int64_t cols, std::vector<float> v) {
  return model::Activation{name, layer, rows, cols, std::move(v)};
}

CircuitWeights weights() {
  CircuitWeights w(linearConfig(8, 2, 4, 4));
  EXPECT_TRUE(w.set(w.layerTensor(0, "mlp.gate_proj.weight"), 1, 2, 0.5f).ok());
  EXPECT_TRUE(w.set(w.layerTensor(0, "mlp.gate_proj.weight"), 3, 7, -1.0f).ok());
  return w;
}

TEST(Margins, ClassifiesLiveUnitsByR2sThresholdsAndIgnoresDeadOnes) {
  const CircuitWeights w = weights();
  // [3 positions, 4 units]; units 0 and 2 are dead (zero gate rows): their 5s must not count.
  const std::vector<model::Activation> taps = {tap("mlp_gate", 0, 3, 4,
                                                   {5, -100, 5, -89,   //
                                                    5, 0, 5, 18,       //
                                                    5, 20, 5, -50})};
  auto r = measureMargins(w, taps, {}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const DecisionMargin& d = r->layers[0].decisions[static_cast<size_t>(DecisionKind::MlpGate)];
  EXPECT_EQ(d.units, 2);
  EXPECT_EQ(d.values, 6);
  EXPECT_EQ(d.zeros, 1);
  EXPECT_EQ(d.off, 2);
  EXPECT_EQ(d.on, 2);
  EXPECT_EQ(d.inBand, 1);
  EXPECT_EQ(d.minAbs, 18);
  EXPECT_EQ(d.maxOff, -89);
  EXPECT_EQ(d.minOn, 18);
  EXPECT_EQ(d.firstInBand, "position 2 unit 3: -50");
  EXPECT_FALSE(r->layers[0].ok());
  EXPECT_TRUE(r->layers[1].ok());  // nothing tapped there
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->smallestAbs(), 18);
}

TEST(Margins, ThresholdsAreInclusiveAndNothingInBandIsOk) {
  const CircuitWeights w = weights();
  const std::vector<model::Activation> taps = {tap("mlp_gate", 0, 1, 4, {0, kOffAtMost, 0, kOnAtLeast})};
  auto r = measureMargins(w, taps, {}, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->layers[0].decisions[0].inBand, 0);
  EXPECT_TRUE(r->ok());
}

TEST(Margins, SignFieldsCountEveryDimThatIsNotExactlyPlusMinusU) {
  const CircuitWeights w = weights();
  const Field f{"f", 2, 3};
  const std::vector<model::Activation> taps = {
      tap("residual_in", 0, 2, 8, {0, 0, 16, -16, 16, 0, 0, 0,  //
                                   9, 9, -16, 15.5f, 16, 9, 9, 9}),
      tap("residual_in", 1, 1, 8, {0, 0, 16, 16, -16, 0, 0, 0})};
  auto r = measureMargins(w, taps, std::vector<Field>{f}, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->positions, 2);
  const SignFieldMargin& s = r->layers[0].signs;
  EXPECT_EQ(s.dims, 3);
  EXPECT_EQ(s.values, 6);
  EXPECT_EQ(s.offNominal, 1);
  EXPECT_EQ(s.minRatio, 15.5 / 16);
  EXPECT_EQ(s.maxRatio, 1.0);
  EXPECT_EQ(s.firstOff, "position 1 f[1]: 15.5");
  EXPECT_TRUE(r->layers[1].ok());
  EXPECT_FALSE(r->ok());
}

TEST(Margins, AddingRunsAddsCountsAndCombinesExtremes) {
  const CircuitWeights w = weights();
  auto a = measureMargins(w, std::vector<model::Activation>{tap("mlp_gate", 0, 1, 4, {0, -100, 0, 30})}, {}, 16);
  auto b = measureMargins(w, std::vector<model::Activation>{tap("mlp_gate", 0, 1, 4, {0, -90, 0, 0})}, {}, 16);
  ASSERT_TRUE(a.ok() && b.ok());
  MarginReport sum;
  sum.add(*a);
  sum.add(*b);
  const DecisionMargin& d = sum.layers[0].decisions[0];
  EXPECT_EQ(d.values, 4);
  EXPECT_EQ(d.zeros, 1);
  EXPECT_EQ(d.off, 2);
  EXPECT_EQ(d.maxOff, -90);
  EXPECT_EQ(d.minOn, 30);   // b saw no on value: its 0 ("none") does not win
  EXPECT_EQ(d.minAbs, 30);
}

TEST(Margins, RefusesTapsThatDoNotFitTheConfig) {
  const CircuitWeights w = weights();
  const std::vector<model::Activation> badLayer = {tap("mlp_gate", 2, 1, 4, {0, 0, 0, 0})};
  auto a = measureMargins(w, badLayer, {}, 16);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::Usage);
  const std::vector<model::Activation> badSize = {tap("mlp_gate", 0, 2, 4, {0, 0, 0})};
  EXPECT_FALSE(measureMargins(w, badSize, {}, 16).ok());
  const std::vector<model::Activation> narrow = {tap("mlp_gate", 0, 1, 3, std::vector<float>(3))};
  EXPECT_FALSE(measureMargins(w, narrow, {}, 16).ok());  // live unit 3 is not in 3 columns
  const std::vector<model::Activation> badResidual = {tap("residual_in", 0, 1, 7, std::vector<float>(7))};
  EXPECT_FALSE(measureMargins(w, badResidual, {}, 16).ok());
  EXPECT_FALSE(measureMargins(w, {}, std::vector<Field>{{"g", 6, 3}}, 16).ok());
  EXPECT_FALSE(measureMargins(w, {}, {}, 0).ok());
}

}  // namespace
}  // namespace qgpu::circuit
