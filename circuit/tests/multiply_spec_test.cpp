// qgpu/circuit/tests/multiply_spec_test.cpp — the torch-free checks of the multiplier
// (circuit/multiply.h): what each op costs by stage, where a partial-product unit's weights land,
// and what is refused. The numerics run through model/ in multiply_test.cpp.
//
// The unit counts are derived by hand from the construction (not read back from the gadget):
// stage 0 = one cancel per product dim + 1 constant + one detector per product; stage 1 = one
// cancel per count bit + 1 + 2 per threshold (a column of h bits has h thresholds, so 2 × the
// number of products, + 2 × 32 for mad's c); stage 2 = one cancel per row dim + 1 + 2 per
// threshold (a window has as many as its largest sum: 287 for mul, 293 for mad, 616 for mulhi.u,
// 619 for mulhi.s, summed from the column heights after stage 1, worked out separately); the
// adders as in adder_test (level 1: 80 cancels + 1 + 8 × 52; level 2: 32 cancels + 3 per bit,
// + 1 cancel and 3 for a carry out).
#include <gtest/gtest.h>

#include <vector>

#include "circuit/multiply.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

constexpr int kBits = 32;
constexpr float kUnit = 16;

struct Rig {
  MulOp op;
  int hidden;
  CircuitWeights w;
  std::vector<UnitWriter> writers;
  std::vector<MulStage> stages;
  MultiplySpec spec;
  Field ballast;
  Field en, isMad;  // gated: the literals' dims
  Field pass;       // gated: a word for a pass-through (not in spec until a test puts it there)

  Rig(MulOp o, int units, bool gated = false)
      : op(o),
        hidden((4 + 5 * kBits + multiplyBusDims(o, gated) + 2 + 127) / 128 * 128),
        w(config(hidden, units)) {
    FieldAllocator alloc(hidden);
    ballast = alloc.take("ballast", 4).value();
    spec.op = o;
    spec.outPrior = Prior::Replace;  // the full layout: out holds a pad, cancelled first
    spec.a = alloc.take("a", kBits).value();
    spec.b = alloc.take("b", kBits).value();
    if (o == MulOp::Mad) spec.c = alloc.take("c", kBits).value();
    spec.out = alloc.take("out", kBits).value();
    spec.bus =
        multiplyBusIn(alloc.take("bus", multiplyBusDims(o, gated)).value(), o, gated).value();
    if (gated) {
      en = alloc.take("en", 1).value();
      isMad = alloc.take("isMad", 1).value();
      spec.enable = {{en.at(0), 1}};
      spec.addendEnable = {{isMad.at(0), 1}};
      pass = alloc.take("pass", kBits).value();
    }
    for (int i = 0; i < multiplyLayers(o); ++i) writers.emplace_back(w, i);
    for (UnitWriter& u : writers)
      stages.push_back({&u, MlpContext{ballast, 1.0, 128, kUnit, false}});
  }
  model::Qwen35Config config(int h, int units) const {
    model::Qwen35Config c = linearConfig(h, multiplyLayers(op), units, 16);
    c.tieWordEmbeddings = true;
    return c;
  }
};

MultiplyReport build(Rig& s) {
  auto r = buildMultiply(s.stages, s.spec);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : MultiplyReport{};
}

TEST(MultiplySpec, MulTakesFiveLayersAndTheseUnitsPerStage) {
  Rig s(MulOp::Lo, 1280);
  EXPECT_EQ(multiplyLayers(MulOp::Lo), 5);
  const MultiplyReport r = build(s);
  EXPECT_EQ(r.partialProducts, 528);  // i + j < 32
  EXPECT_EQ(r.countBits, 124);
  EXPECT_EQ(r.busDims, 528 + 124);
  EXPECT_EQ(r.unitsPerLayer, (std::vector<int>{528 + 1 + 528, 124 + 1 + 2 * 528, 64 + 1 + 2 * 287,
                                               80 + 1 + 8 * 52, 32 + 32 * 3}));
  // Column heights: 32 products in column 31; ≤ 5 count bits per column; two rows.
  EXPECT_EQ(r.maxHeight, (std::vector<int>{32, 5, 2}));
  EXPECT_EQ(r.gadget.onMin, 128.0);
  EXPECT_EQ(r.gadget.offMax, -128.0);
}

TEST(MultiplySpec, MadAddsOneRowInStageOneAndNoLayer) {
  Rig s(MulOp::Mad, 1280);
  EXPECT_EQ(multiplyLayers(MulOp::Mad), 5);
  const MultiplyReport r = build(s);
  EXPECT_EQ(r.maxHeight, (std::vector<int>{33, 5, 2}));
  EXPECT_EQ(r.unitsPerLayer, (std::vector<int>{528 + 1 + 528, 128 + 1 + 2 * (528 + 32),
                                               64 + 1 + 2 * 293, 80 + 1 + 8 * 52, 32 + 32 * 3}));
}

// The gates: stage 0 gains the 32 gated copies of c (and their cancels); the product units gain
// en's term and a constant; nothing else changes.
TEST(MultiplySpec, GatedMadCopiesTheAddendInStageZeroAndGatesEveryProduct) {
  Rig s(MulOp::Mad, 1280, true);
  const MultiplyReport r = build(s);
  EXPECT_EQ(r.busDims, multiplyBusDims(MulOp::Mad) + 32);
  EXPECT_EQ(r.unitsPerLayer, (std::vector<int>{(528 + 32) + 1 + 528 + 32, 128 + 1 + 2 * (528 + 32),
                                               64 + 1 + 2 * 293, 80 + 1 + 8 * 52, 32 + 32 * 3}));
  const std::string gate = s.w.layerTensor(0, "mlp.gate_proj.weight");
  const std::string up = s.w.layerTensor(0, "mlp.up_proj.weight");
  const std::string down = s.w.layerTensor(0, "mlp.down_proj.weight");
  // Units 0..559 cancel region X, 560 the constant, 561 + 32i + j the product a_i·b_j (N = x̂(a_i)
  // + x̂(en) − 1), then 1,089 + k the copy c_k ∧ en ∧ isMad (N = x̂(c_k) + x̂(en) + x̂(isMad) − 2)
  // at bus dim 528 + k.
  const int product = 561 + 32 * 3 + 5;
  EXPECT_EQ(s.w.get(gate, product, s.spec.a.at(3)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, product, s.en.at(0)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, product, s.isMad.at(0)).value(), 0.0f);
  EXPECT_EQ(s.w.get(gate, product, s.ballast.at(0)).value(), -128.0f);
  const int copy = 1089 + 7;
  EXPECT_EQ(s.w.get(gate, copy, s.spec.c.at(7)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, copy, s.en.at(0)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, copy, s.isMad.at(0)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, copy, s.ballast.at(0)).value(), -256.0f);
  EXPECT_EQ(s.w.get(up, copy, s.ballast.at(0)).value(), 2.0f);  // up = 2λ: +2u when on
  EXPECT_EQ(s.w.get(down, s.spec.bus.products.at(528 + 7), copy).value(), 0.125f);
  EXPECT_EQ(s.w.get(down, s.spec.bus.products.at(528 + 7), 560).value(),
            -0.125f);  // the constant's −u
}

// The pass-through: 32 detectors more in stage 0, each pass_k ∧ ¬en onto c's copy k; nothing else
// changes. Refused unless the gated mad's literals exclude it from the products.
TEST(MultiplySpec, PassThroughAddsOneDetectorPerBitOntoTheAddendCopies) {
  Rig s(MulOp::Mad, 1280, true);
  s.spec.pass = s.pass;
  s.spec.passEnable = {{s.en.at(0), -1}};
  const MultiplyReport r = build(s);
  EXPECT_EQ(r.busDims, multiplyBusDims(MulOp::Mad) + 32);
  EXPECT_EQ(r.unitsPerLayer,
            (std::vector<int>{(528 + 32) + 1 + 528 + 32 + 32, 128 + 1 + 2 * (528 + 32),
                              64 + 1 + 2 * 293, 80 + 1 + 8 * 52, 32 + 32 * 3}));
  const std::string gate = s.w.layerTensor(0, "mlp.gate_proj.weight");
  const std::string down = s.w.layerTensor(0, "mlp.down_proj.weight");
  // Unit 1,121 + k: pass_k ∧ ¬en (N = x̂(pass_k) − x̂(en) − 1), onto bus dim 528 + k.
  const int unit = 1121 + 9;
  EXPECT_EQ(s.w.get(gate, unit, s.pass.at(9)).value(), 128.0f);
  EXPECT_EQ(s.w.get(gate, unit, s.en.at(0)).value(), -128.0f);
  EXPECT_EQ(s.w.get(gate, unit, s.isMad.at(0)).value(), 0.0f);
  EXPECT_EQ(s.w.get(gate, unit, s.ballast.at(0)).value(), -128.0f);
  EXPECT_EQ(s.w.get(down, s.spec.bus.products.at(528 + 9), unit).value(), 0.125f);

  auto refused = [&](MultiplySpec spec, const char* what) {
    auto bad = buildMultiply(s.stages, spec);
    ASSERT_FALSE(bad.ok()) << what;
    EXPECT_EQ(bad.error().kind, ErrorKind::Usage) << what << ": " << bad.error().message;
  };
  MultiplySpec overlapping = s.spec;
  overlapping.passEnable = {{s.isMad.at(0), -1}};  // ¬isMad: the products may still count
  refused(overlapping, "passEnable that does not negate an enable literal");
  MultiplySpec wordless = s.spec;
  wordless.pass = {};
  refused(wordless, "passEnable without a word");
  MultiplySpec narrow = s.spec;
  narrow.pass.dims = 16;
  refused(narrow, "a 16-bit pass word");
  MultiplySpec ungated = s.spec;
  ungated.addendEnable.clear();
  ungated.bus.products.dims = multiplyBusRegions(MulOp::Mad).products;
  refused(ungated, "a pass-through without the gated addend");
}

// The bus's regions: the products (and the gated addend's copies), the count bits, the two rows
// (mulhi: 64 bits wide, then the low adder's discarded sum and c32), the adders' buses (80 each,
// as in adder_test). In one field the rows lie over the products and the adder over the counts.
TEST(MultiplySpec, BusRegionsOverlapInOneFieldAndStandAloneAsFour) {
  auto dims = [](MulOp op, bool gated) {
    const MultiplyBusDims r = multiplyBusRegions(op, gated);
    return std::vector<int>{r.products, r.counts, r.rows, r.adder};
  };
  EXPECT_EQ(dims(MulOp::Lo, false), (std::vector<int>{528, 124, 64, 80}));
  EXPECT_EQ(dims(MulOp::Mad, true), (std::vector<int>{528 + 32, 128, 64, 80}));
  EXPECT_EQ(dims(MulOp::HiU, false), (std::vector<int>{1024, 264, 128 + 33, 160}));
  EXPECT_EQ(multiplyBusDims(MulOp::Mad, true), 560 + 128);
  const MultiplyBus b = multiplyBusIn(Field{"bus", 100, 688}, MulOp::Mad, true).value();
  EXPECT_EQ(b.products.offset, 100);
  EXPECT_EQ(b.rows.offset, 100);
  EXPECT_EQ(b.counts.offset, 100 + 560);
  EXPECT_EQ(b.adder.offset, 100 + 560);
}

TEST(MultiplySpec, MulHiTakesSixLayersForTheCarryOutOfTheLowHalf) {
  for (MulOp op : {MulOp::HiU, MulOp::HiS}) {
    Rig s(op, 2560);
    EXPECT_EQ(multiplyLayers(op), 6);
    const MultiplyReport r = build(s);
    EXPECT_EQ(r.partialProducts, 1024);
    // Stage 3: both halves' level 1; stage 4: the low half's level 2 (discarded sum + c32);
    // stage 5: the high half's level 2. mulhi.s: two constant one-bits (columns 32, 63) add two
    // count bits and three window thresholds, no products and no stage-1 thresholds.
    const int countBits = op == MulOp::HiU ? 264 : 266, windows = op == MulOp::HiU ? 616 : 619;
    EXPECT_EQ(r.countBits, countBits) << mulOpName(op);
    EXPECT_EQ(r.unitsPerLayer,
              (std::vector<int>{1024 + 1 + 1024, countBits + 1 + 2 * 1024, 128 + 1 + 2 * windows,
                                2 * (80 + 1 + 8 * 52), 33 + 32 * 3 + 3, 32 + 32 * 3}))
        << mulOpName(op);
    EXPECT_EQ(r.maxHeight, (std::vector<int>{32, 6, 2})) << mulOpName(op);
  }
}

TEST(MultiplySpec, PartialProductUnitGatesOnABitAndTakesTheOtherAsUp) {
  Rig s(MulOp::HiS, 2560);
  build(s);
  const std::string gate = s.w.layerTensor(0, "mlp.gate_proj.weight");
  const std::string up = s.w.layerTensor(0, "mlp.up_proj.weight");
  const std::string down = s.w.layerTensor(0, "mlp.down_proj.weight");
  // Units 0..1023 cancel the products' dims, unit 1024 is the constant; unit 1025 + 32i + j is
  // a_i·b_j, its product at bus dim 32i + j.
  auto unitOf = [](int i, int j) { return 1025 + 32 * i + j; };
  auto dimOf = [&](int i, int j) { return s.spec.bus.products.at(32 * i + j); };
  const int u = unitOf(3, 5);
  EXPECT_EQ(s.w.get(gate, u, s.spec.a.at(3)).value(), 128.0f);  // G·x̂(a_3)
  EXPECT_EQ(s.w.get(gate, u, s.ballast.at(0)).value(), 0.0f);   // N = x̂: no constant
  EXPECT_EQ(s.w.get(up, u, s.spec.b.at(5)).value(), 1.0f);      // up = h(b_5) + h(ballast)
  EXPECT_EQ(s.w.get(up, u, s.ballast.at(0)).value(), 1.0f);
  // down: +1·u/(λ²G) = 16/128 adds 2u·a·b; the constant writes −u.
  EXPECT_EQ(s.w.get(down, dimOf(3, 5), u).value(), 0.125f);
  EXPECT_EQ(s.w.get(down, dimOf(3, 5), 1024).value(), -0.125f);
  // Baugh–Wooley: a_31·b_5 has weight −2^36, so its dim holds the complement: −2u·a·b, +u.
  EXPECT_EQ(s.w.get(down, dimOf(31, 5), unitOf(31, 5)).value(), -0.125f);
  EXPECT_EQ(s.w.get(down, dimOf(31, 5), 1024).value(), 0.125f);
  // a_31·b_31 has weight +2^62: not complemented.
  EXPECT_EQ(s.w.get(down, dimOf(31, 31), unitOf(31, 31)).value(), 0.125f);
}

TEST(MultiplySpec, RefusesSpecsThatDoNotFit) {
  Rig s(MulOp::Lo, 1280);
  auto expectUsage = [&](const MultiplySpec& spec, std::span<const MulStage> st, const char* what) {
    auto r = buildMultiply(st, spec);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().kind, ErrorKind::Usage) << what << ": " << r.error().message;
  };
  MultiplySpec narrow = s.spec;
  narrow.a.dims = 16;
  expectUsage(narrow, s.stages, "16-bit a");
  MultiplySpec shortBus = s.spec;
  shortBus.bus.counts.dims -= 1;
  expectUsage(shortBus, s.stages, "a bus region one dim short");
  EXPECT_FALSE(multiplyBusIn(Field{"bus", 0, multiplyBusDims(MulOp::Lo) - 1}, MulOp::Lo).ok());
  MultiplySpec addend = s.spec;
  addend.c = s.spec.a;
  expectUsage(addend, s.stages, "an addend for mul");
  MultiplySpec noAddend = s.spec;
  noAddend.op = MulOp::Mad;
  expectUsage(noAddend, s.stages, "mad without an addend");
  MultiplySpec hi = s.spec;
  hi.op = MulOp::HiU;
  expectUsage(hi, s.stages, "mulhi with 5 stages");
  MultiplySpec gatedLo = s.spec;
  gatedLo.addendEnable = {{s.spec.a.at(0), 1}};
  expectUsage(gatedLo, s.stages, "addendEnable on mul");
  expectUsage(s.spec, std::span<const MulStage>(s.stages).first(4), "4 stages");
  std::vector<MulStage> missing = s.stages;
  missing[2].units = nullptr;
  expectUsage(s.spec, missing, "a stage without a writer");
  // A layer too small for stage 0's 1,057 units: the unit writer's refusal comes through.
  Rig small(MulOp::Lo, 1000);
  expectUsage(small.spec, small.stages, "a layer of 1,000 units");
  // λG below 89 is OverLimit (rule R2), from the pieces.
  Rig weak(MulOp::Lo, 1280);
  weak.stages[0].ctx.gain = 64;
  auto r = buildMultiply(weak.stages, weak.spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
}

}  // namespace
}  // namespace qgpu::circuit
