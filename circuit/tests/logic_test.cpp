// qgpu/circuit/tests/logic_test.cpp — the torch-free checks of the MLP gadgets (circuit/logic.h):
// what each costs in units, the margins it reports, where a detector's weights land, and what is
// refused (bad widths, a table of the wrong size, a gain that misses rule R2, a full layer). The
// numerics run through model/ in lut_test, adder_test, compare_test, requantise_test, stack_test.
#include <gtest/gtest.h>

#include "circuit/logic.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config oneLayer(int units) {
  model::Qwen35Config c = linearConfig(256, 2, units, 16);
  c.tieWordEmbeddings = true;
  return c;
}

struct Fixture {
  CircuitWeights w{oneLayer(1024)};
  FieldAllocator alloc{256};
  Field ballast = alloc.take("ballast", 4).value();
  MlpContext ctx{ballast, 1.0, 128, 16, false};
};

TEST(LogicGadgets, DecodeDetectorRowHasPatternWeightsAndThreshold) {
  Fixture f;
  const Field in = f.alloc.take("in", 3).value(), out = f.alloc.take("out", 8).value();
  UnitWriter units(f.w, 0);
  auto r = buildDecode(units, {in, out, Prior::Zero}, f.ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().units, 9);  // 8 detectors + 1 constant
  EXPECT_EQ(r.value().onMin, 128.0);
  EXPECT_EQ(r.value().offMax, -128.0);
  // Unit 1 + p detects p; pattern 5 = 0b101: +G, −G, +G on the bits, −(k−1)·G = −256 on ballast.
  const std::string gate = f.w.layerTensor(0, "mlp.gate_proj.weight");
  EXPECT_EQ(f.w.get(gate, 6, in.at(0)).value(), 128.0f);
  EXPECT_EQ(f.w.get(gate, 6, in.at(1)).value(), -128.0f);
  EXPECT_EQ(f.w.get(gate, 6, in.at(2)).value(), 128.0f);
  EXPECT_EQ(f.w.get(gate, 6, f.ballast.at(0)).value(), -256.0f);
  // down: +2u/(λ²G) = 32/128 on its own dim; the constant unit −u/(λ²G) on every dim.
  const std::string down = f.w.layerTensor(0, "mlp.down_proj.weight");
  EXPECT_EQ(f.w.get(down, out.at(5), 6).value(), 0.25f);
  EXPECT_EQ(f.w.get(down, out.at(4), 6).value(), 0.0f);
  EXPECT_EQ(f.w.get(down, out.at(4), 0).value(), -0.125f);
}

TEST(LogicGadgets, UnitCountsPerGadget) {
  Fixture f;
  const Field a = f.alloc.take("a", 32).value(), b = f.alloc.take("b", 32).value();
  const Field bus = f.alloc.take("bus", adderBusDims(32)).value();
  const Field out = f.alloc.take("out", 32).value(), cbus = f.alloc.take("cbus", 16).value();
  const Field bit = f.alloc.take("bit", 1).value();
  UnitWriter l1(f.w, 0), l2(f.w, 1);
  AdderSpec s;
  s.a = a;
  s.b = b;
  s.bus = bus;
  s.out = out;
  auto add = buildAdder(l1, f.ctx, l2, f.ctx, s);
  ASSERT_TRUE(add.ok()) << add.error().message;
  EXPECT_EQ(l1.used(), 1 + 8 * 52);  // constant + per nibble 8 sum bits x 3 step pairs + G, P
  EXPECT_EQ(l2.used(), 32 * 3);      // per sum bit: copy of S0 + a step pair
  CompareSpec c;
  c.op = CompareOp::LtS;
  c.a = a;
  c.b = b;
  c.bus = cbus;
  c.out = bit;
  auto cmp = buildCompare(l1, f.ctx, l2, f.ctx, c);
  ASSERT_TRUE(cmp.ok()) << cmp.error().message;
  EXPECT_EQ(cmp.value().units, 1 + 8 * 4 + 1 + 2);
  // le.s of the same a, b on that bus: level 2 only (memory_stage_test runs it through model/).
  const int level1Before = l1.used();
  const Field le = f.alloc.take("le", 1).value();
  CompareSpec shared = c;
  shared.op = CompareOp::LeS;
  shared.out = le;
  shared.busWritten = true;
  auto second = buildCompare(l1, f.ctx, l2, f.ctx, shared);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second.value().units, 1 + 2);
  EXPECT_EQ(l1.used(), level1Before);
  // A top field: 2 dims, and the bus then ends below the top nibble; anything else is Usage.
  CompareSpec top = c;
  top.top = f.alloc.take("top", 1).value();
  auto oneDim = buildCompare(l1, f.ctx, l2, f.ctx, top);
  ASSERT_FALSE(oneDim.ok());
  EXPECT_EQ(oneDim.error().kind, ErrorKind::Usage);
  top.top = f.alloc.take("top2", 2).value();
  auto wholeBus = buildCompare(l1, f.ctx, l2, f.ctx, top);
  ASSERT_FALSE(wholeBus.ok());
  EXPECT_NE(wholeBus.error().message.find("without the top's"), std::string::npos);
  EXPECT_EQ(l1.used(), level1Before);
  // lt.s with its own top on lt.u's bus below it: level 1 writes the top nibble only.
  top.bus = cbus.slice(0, 14, "below the top");
  top.busWritten = true;
  auto topOnly = buildCompare(l1, f.ctx, l2, f.ctx, top);
  ASSERT_TRUE(topOnly.ok()) << topOnly.error().message;
  EXPECT_EQ(l1.used(), level1Before + 1 + 4);
  // shareLevel1 sets that form (and eq's, lt.u's: the whole bus); without a 2-dim top, Usage.
  CompareSpec viaShare = c;
  ASSERT_TRUE(shareLevel1(viaShare, cbus, top.top).ok());
  EXPECT_EQ(viaShare.bus.offset, cbus.offset);
  EXPECT_EQ(viaShare.bus.dims, 14);
  EXPECT_EQ(viaShare.top.offset, top.top.offset);
  EXPECT_TRUE(viaShare.busWritten);
  EXPECT_FALSE(viaShare.topWritten);
  CompareSpec eq = c;
  eq.op = CompareOp::Eq;
  ASSERT_TRUE(shareLevel1(eq, cbus, top.top).ok());
  EXPECT_EQ(eq.bus.dims, 16);
  EXPECT_EQ(eq.top.dims, 0);
  EXPECT_FALSE(eq.busWritten);
  const Status noTop = shareLevel1(viaShare, cbus, Field{});
  ASSERT_FALSE(noTop.ok());
  EXPECT_EQ(noTop.error().kind, ErrorKind::Usage);
  auto mux = buildMux(l2, {{a, b}, bit, Selector::Binary, out, Prior::Replace}, f.ctx);
  ASSERT_TRUE(mux.ok()) << mux.error().message;
  EXPECT_EQ(mux.value().units, 32 + 2 * 32);
}

// The pad restore (layout.h): one always-on linear unit per dim, up = ballast − the dim, so it
// adds u − x: gate G on the ballast, up +1 on the ballast and −1 on its dim, down u/(λ²G).
TEST(LogicGadgets, APadUnitAddsUMinusWhatTheDimHolds) {
  Fixture f;
  const Field field = f.alloc.take("field", 3).value();
  UnitWriter units(f.w, 0);
  auto r = buildPad(units, field, f.ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().units, 3);
  const std::string gate = f.w.layerTensor(0, "mlp.gate_proj.weight");
  const std::string up = f.w.layerTensor(0, "mlp.up_proj.weight");
  const std::string down = f.w.layerTensor(0, "mlp.down_proj.weight");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(f.w.get(gate, i, f.ballast.at(0)).value(), 128.0f) << i;
    EXPECT_EQ(f.w.get(gate, i, field.at(i)).value(), 0.0f) << i;
    EXPECT_EQ(f.w.get(up, i, f.ballast.at(0)).value(), 1.0f) << i;
    EXPECT_EQ(f.w.get(up, i, field.at(i)).value(), -1.0f) << i;
    EXPECT_EQ(f.w.get(down, field.at(i), i).value(), 0.125f) << i;
    for (int j = 0; j < 3; ++j) {
      if (j == i) continue;
      EXPECT_EQ(f.w.get(down, field.at(j), i).value(), 0.0f) << i << " " << j;
    }
  }
}

TEST(LogicGadgets, RefusesBadSpecs) {
  Fixture f;
  const Field in = f.alloc.take("in", 9).value(), out = f.alloc.take("out", 32).value();
  UnitWriter units(f.w, 0);
  Field in8 = in;
  in8.dims = 8;
  auto wide = buildLookup(units, {in, out, std::vector<uint32_t>(512), Prior::Zero}, f.ctx);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error().kind, ErrorKind::Usage);
  auto shortTable = buildLookup(units, {in8, out, std::vector<uint32_t>(255), Prior::Zero}, f.ctx);
  ASSERT_FALSE(shortTable.ok());
  EXPECT_NE(shortTable.error().message.find("255 words"), std::string::npos);
  Field odd = out;
  odd.dims = 30;
  AdderSpec s;
  s.a = odd;
  s.b = odd;
  EXPECT_FALSE(buildAdder(units, f.ctx, units, f.ctx, s).ok());
  auto badMux = buildMux(units, {{out}, in8, Selector::OneHot, out, Prior::Zero}, f.ctx);
  EXPECT_FALSE(badMux.ok());
  EXPECT_EQ(units.used(), 0);  // nothing was written by a refused spec
}

TEST(LogicGadgets, RefusesAGainBelowRuleR2UnlessTheTwinAsksForIt) {
  Fixture f;
  const Field in = f.alloc.take("in", 2).value(), out = f.alloc.take("out", 4).value();
  UnitWriter units(f.w, 0);
  MlpContext low = f.ctx;
  low.gain = 64;  // λG = 64 < 89
  auto r = buildDecode(units, {in, out, Prior::Zero}, low);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(r.error().message.find("rule R2"), std::string::npos);
  low.lowGainTwin = true;
  auto twin = buildDecode(units, {in, out, Prior::Zero}, low);
  ASSERT_TRUE(twin.ok());
  EXPECT_EQ(twin.value().onMin, 4.0);
}

TEST(LogicGadgets, RefusesWhenTheLayerIsFull) {
  CircuitWeights w(oneLayer(200));
  FieldAllocator alloc(256);
  const Field ballast = alloc.take("ballast", 4).value();
  const Field in = alloc.take("in", 8).value(), out = alloc.take("out", 256 - 12).value();
  Field out8 = out;
  out8.dims = 8;
  UnitWriter units(w, 0);
  auto r = buildLookup(units, {in, out8, std::vector<uint32_t>(256, 1), Prior::Zero},
                       {ballast, 1.0, 128, 16, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("only 200 units"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::circuit
