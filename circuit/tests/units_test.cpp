// qgpu/circuit/tests/units_test.cpp — the torch-free checks of the SwiGLU unit writer
// (circuit/units.h): where a unit's weights land, how constants are split for bf16 (rule R4), and
// what is refused. The units' numerics run through model/ in the gadget tests.
#include <gtest/gtest.h>

#include <cmath>

#include "circuit/units.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config oneLayer() {
  model::Qwen35Config c = linearConfig(64, 1, 4, 16);
  c.tieWordEmbeddings = true;
  return c;
}

float at(const CircuitWeights& w, const std::string& suffix, int row, int col) {
  return w.get(w.layerTensor(0, suffix), row, col).value();
}

TEST(UnitWriter, PlacesGateUpRowsAndDownColumnInTheNextUnit) {
  CircuitWeights w(oneLayer());
  UnitWriter units(w, 0);
  ASSERT_EQ(units.add({{{3, 64.0f}}, {{0, 1.0f}}, {{9, 0.5f}}}).value(), 0);
  ASSERT_EQ(units.add({{{4, -64.0f}, {5, 64.0f}}, {{0, 2.0f}}, {{10, -0.25f}}}).value(), 1);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 0, 3), 64.0f);
  EXPECT_EQ(at(w, "mlp.up_proj.weight", 0, 0), 1.0f);
  EXPECT_EQ(at(w, "mlp.down_proj.weight", 9, 0), 0.5f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 1, 4), -64.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 1, 5), 64.0f);
  EXPECT_EQ(at(w, "mlp.down_proj.weight", 10, 1), -0.25f);
  EXPECT_EQ(units.used(), 2);
}

TEST(UnitWriter, RefusesAFullLayerABadDimAndANonBf16Weight) {
  CircuitWeights w(oneLayer());
  UnitWriter units(w, 0, 3);
  auto bad = units.add({{{64, 1.0f}}, {}, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("outside the hidden size"), std::string::npos);
  auto inexact = units.add({{{1, 64.0f * 513.0f}}, {}, {}});
  ASSERT_FALSE(inexact.ok());
  EXPECT_NE(inexact.error().message.find("rule R4"), std::string::npos);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 3, 1), 0.0f);  // nothing written
  ASSERT_TRUE(units.add({{{1, 1.0f}}, {}, {}}).ok());
  auto full = units.add({{{1, 1.0f}}, {}, {}});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().kind, ErrorKind::Usage);
}

TEST(UnitGuard, AddsAPowerOfTwoOnTheLiteralAndTakesItBackFromTheConstant) {
  CircuitWeights w(oneLayer());
  const Field ballast{"ballast", 60, 4};
  UnitWriter units(w, 0);
  // gate = 128·x̂_3 + 64 (λ = 1): at most 192 where the literal does not hold, so a = 256 is the
  // smallest power of two with 192 − 2a ≤ −128; the constant 64 − 256 = −192 is one bf16 piece.
  units.setGuard(UnitGuard{7, 1, ballast, 1.0});
  ASSERT_TRUE(units.add({{{3, 128.0f}, {60, 64.0f}}, {{60, 1.0f}}, {{9, 1.0f}}}).ok());
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 0, 3), 128.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 0, 7), 256.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 0, 60), -192.0f);
  EXPECT_EQ(at(w, "mlp.up_proj.weight", 0, 60), 1.0f);  // up and down as given
  EXPECT_EQ(at(w, "mlp.down_proj.weight", 9, 0), 1.0f);
  // A literal that holds at −u gets −a.
  units.setGuard(UnitGuard{8, -1, ballast, 1.0});
  ASSERT_TRUE(units.add({{{3, 128.0f}}, {{60, 1.0f}}, {{9, 1.0f}}}).ok());
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 1, 8), -128.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 1, 60), -128.0f);
  // A unit already at −128 or less where the literal fails (an AND with it) is left as it is.
  units.setGuard(UnitGuard{7, 1, ballast, 1.0});
  ASSERT_TRUE(units.add({{{7, 128.0f}, {3, 128.0f}, {60, -128.0f}}, {{60, 1.0f}}, {}}).ok());
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 2, 7), 128.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 2, 60), -128.0f);
  // Without a guard nothing is added.
  units.setGuard(std::nullopt);
  ASSERT_TRUE(units.add({{{3, 128.0f}}, {{60, 1.0f}}, {}}).ok());
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 3, 7), 0.0f);
  EXPECT_EQ(at(w, "mlp.gate_proj.weight", 3, 60), 0.0f);
}

TEST(UnitGuard, AScopeGuardsEveryWriterInItAndGivesTheirGuardsBack) {
  CircuitWeights w(oneLayer());
  const Field ballast{"ballast", 60, 4};
  UnitWriter a(w, 0), b(w, 0, 10);
  a.setGuard(UnitGuard{5, 1, ballast, 1.0});
  {
    const GuardScope scope({&a, &b}, UnitGuard{7, 1, ballast, 1.0});
    EXPECT_EQ(a.guard()->dim, 7);
    EXPECT_EQ(b.guard()->dim, 7);
  }
  EXPECT_EQ(a.guard()->dim, 5);
  EXPECT_FALSE(b.guard().has_value());
}

TEST(ConstantTerms, SplitsTenSignificantBitsIntoBf16Pieces) {
  // The prototype's adder constant 64·513 = 32832: bf16 alone rounds it to 32768.
  Field ballast{"ballast", 20, 4};
  auto terms = constantTerms(-64.0 * 513.0, ballast);
  ASSERT_TRUE(terms.ok());
  ASSERT_EQ(terms->size(), 2u);
  EXPECT_EQ((*terms)[0].dim, 20);
  EXPECT_EQ((*terms)[0].weight, -32768.0f);
  EXPECT_EQ((*terms)[1].dim, 21);
  EXPECT_EQ((*terms)[1].weight, -64.0f);
  EXPECT_TRUE(constantTerms(0.0, ballast)->empty());
  EXPECT_EQ(constantTerms(96.0, ballast)->size(), 1u);
}

TEST(ConstantTerms, RefusesAConstantThatNeedsMorePiecesThanBallastDims) {
  Field ballast{"ballast", 0, 2};
  auto terms = constantTerms(1.0 + std::ldexp(1.0, -9) + std::ldexp(1.0, -18), ballast);
  ASSERT_FALSE(terms.ok());
  EXPECT_NE(terms.error().message.find("bf16 pieces"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::circuit
