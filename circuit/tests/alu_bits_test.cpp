// qgpu/circuit/tests/alu_bits_test.cpp — the torch-free checks of the bit-ALU gadgets
// (circuit/alu_bits.h): what each costs in units (the figures of docs/circuit.md §9 "Built: the
// bit ALU"), where the shifter's amount detector and selects land, the op → shift spec map, and
// what is refused. The numerics run through model/ in bitops_test, shift_test and bfe_test.
#include <gtest/gtest.h>

#include "circuit/alu_bits.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

struct Fixture {
  CircuitWeights w{linearConfig(256, 2, 4096, 16)};
  FieldAllocator alloc{256};
  Field ballast = alloc.take("ballast", 4).value();
  Field a = alloc.take("a", 32).value(), b = alloc.take("b", 32).value();
  Field c = alloc.take("c", 32).value(), out = alloc.take("out", 32).value();
  Field bus = alloc.take("bus", bfeBusDims(true)).value();
  MlpContext ctx{ballast, 1.0, 128, 16, false};
};

int unitsOf(const Expected<GadgetReport>& r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value().units : -1;
}

TEST(AluBitsGadgets, UnitCountsPerGadget) {
  Fixture f;
  UnitWriter u(f.w, 0);
  EXPECT_EQ(unitsOf(buildBitwise(u, {BitwiseOp::And, f.a, f.b, f.out, Prior::Zero}, f.ctx)), 33);
  EXPECT_EQ(unitsOf(buildBitwise(u, {BitwiseOp::Or, f.a, f.b, f.out, Prior::Zero}, f.ctx)), 33);
  EXPECT_EQ(unitsOf(buildBitwise(u, {BitwiseOp::Xor, f.a, f.b, f.out, Prior::Zero}, f.ctx)), 64);
  EXPECT_EQ(unitsOf(buildBitwise(u, {BitwiseOp::Not, f.a, {}, f.out, Prior::Zero}, f.ctx)), 32);
  EXPECT_EQ(unitsOf(buildBitwise(u, {BitwiseOp::Not, f.a, {}, f.out, Prior::Replace}, f.ctx)), 64);
  EXPECT_EQ(unitsOf(buildPopc(u, {f.a, f.out, Prior::Zero}, f.ctx)), 65);
  Field byte = f.a;
  byte.dims = 8;
  EXPECT_EQ(unitsOf(buildPopc(u, {byte, f.out, Prior::Zero}, f.ctx)), 17);
  EXPECT_EQ(unitsOf(buildPriority(u, {PriorityOp::Clz, f.a, f.out, Prior::Zero}, f.ctx)), 33);
  EXPECT_EQ(unitsOf(buildPriority(u, {PriorityOp::BfindU, f.a, f.out, Prior::Zero}, f.ctx)), 33);
  EXPECT_EQ(unitsOf(buildBrev(u, {f.a, f.out, Prior::Zero}, f.ctx)), 32);
  EXPECT_EQ(unitsOf(buildPrmt(u, {f.a, f.b, f.c, f.out, Prior::Zero}, f.ctx)), 288);
  UnitWriter s(f.w, 1);
  // Clamp over 32 amount bits: 1,024 selects + the >= 32 step pair; wrap: the selects only.
  EXPECT_EQ(unitsOf(buildShift(s, *shiftSpecFor(machine::Op::ShrS, f.a, f.b, f.c, f.out,
                                                Prior::Zero), f.ctx)),
            1026);
  EXPECT_EQ(unitsOf(buildShift(s, *shiftSpecFor(machine::Op::ShfLW, f.a, f.b, f.c, f.out,
                                                Prior::Zero), f.ctx)),
            1024);
}

TEST(AluBitsGadgets, LaneSharedShifterCostsAPrepAndAWindow) {
  CircuitWeights w(linearConfig(384, 2, 2048, 16));
  FieldAllocator al(384);
  const Field ballast = al.take("ballast", 4).value(), op = al.take("op", 5).value();
  const Field a = al.take("a", 32).value(), b = al.take("b", 32).value();
  const Field c = al.take("c", 32).value(), hi = al.take("hi", 32).value();
  const Field lo = al.take("lo", 32).value(), start = al.take("start", 33).value();
  const Field out = al.take("out", 32).value();
  const MlpContext ctx{ballast, 1.0, 128, 16, false};
  UnitWriter l1(w, 0), l2(w, 1);
  // 1 constant (hi, lo, start at −u), hi 1 + 32 + 32, lo 32, start 4 x 32 detectors + 2 pairs.
  EXPECT_EQ(unitsOf(buildShiftPrep(l1, {op, a, b, c, hi, lo, start, Prior::Zero}, ctx)), 230);
  EXPECT_EQ(unitsOf(buildWindow(l2, {lo, hi, start, out, Prior::Zero}, ctx)), 1057);
  // Window unit 1 + 32·s + j selects W_{j+s}: s = 32, j = 5 reads hi bit 5 (and the ballast).
  const std::string up = w.layerTensor(1, "mlp.up_proj.weight");
  EXPECT_EQ(w.get(up, 1 + 32 * 32 + 5, hi.at(5)).value(), 1.0f);
  EXPECT_EQ(w.get(up, 1 + 32 * 32 + 5, ballast.at(0)).value(), 1.0f);
  EXPECT_EQ(w.get(up, 1 + 3 * 32 + 30, hi.at(1)).value(), 1.0f);  // s = 3, j = 30: W_33
  Field four = op;
  four.dims = 4;
  UnitWriter l3(w, 0, 1000);
  auto bad = buildShiftPrep(l3, {four, a, b, c, hi, lo, start, Prior::Zero}, ctx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_EQ(l3.used(), 0);
}

// ShiftPrepSpec::bfe (the ALU stage's bfe sh): a fifth detector group over b's low 8 bits, 32
// detectors + the "pos ≥ 32" pair; a bfe op sets s = min(pos, 32) with W = {0, a}.
TEST(AluBitsGadgets, ShiftPrepServesBfeForThirtyFourUnits) {
  CircuitWeights w(linearConfig(384, 1, 2048, 16));
  FieldAllocator al(384);
  const Field ballast = al.take("ballast", 4).value(), op = al.take("op", 5).value();
  const Field bfe = al.take("bfe", 2).value();
  const Field a = al.take("a", 32).value(), b = al.take("b", 32).value();
  const Field c = al.take("c", 32).value(), hi = al.take("hi", 32).value();
  const Field lo = al.take("lo", 32).value(), start = al.take("start", 33).value();
  const MlpContext ctx{ballast, 1.0, 128, 16, false};
  UnitWriter l1(w, 0);
  ShiftPrepSpec s{op, a, b, c, hi, lo, start, Prior::Zero, bfe};
  EXPECT_EQ(unitsOf(buildShiftPrep(l1, s, ctx)), 230 + 34);
  // The last group's detector for k = 3 (unit 230 + 3) reads bits 5..7 of b negated, not bit 8.
  const std::string gate = w.layerTensor(0, "mlp.gate_proj.weight");
  EXPECT_EQ(w.get(gate, 230 + 3, b.at(7)).value(), -128.0f);
  EXPECT_EQ(w.get(gate, 230 + 3, b.at(8)).value(), 0.0f);
  EXPECT_EQ(w.get(gate, 230 + 3, bfe.at(1)).value(), 128.0f);
  Field one = bfe;
  one.dims = 1;
  UnitWriter l2(w, 0, 1000);
  auto bad = buildShiftPrep(l2, {op, a, b, c, hi, lo, start, Prior::Zero, one}, ctx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_EQ(l2.used(), 0);
}

// BfeSpec::shiftOutside: level 1 without its shifter (1,026 units fewer); buildBfe, whose level 2
// would read an unwritten sh, refuses it.
TEST(AluBitsGadgets, BfeLevel1CanLeaveItsShiftToTheCaller) {
  Fixture f;
  UnitWriter l1(f.w, 0), l2(f.w, 1);
  BfeSpec s{true, f.a, f.b, f.c, f.bus, f.out};
  s.shiftOutside = true;
  EXPECT_EQ(unitsOf(buildBfeLevel1(l1, f.ctx, s)), 1 + 128 + 64);
  const int used = l1.used();
  auto bad = buildBfe(l1, f.ctx, l2, f.ctx, s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_EQ(l1.used(), used);
}

TEST(AluBitsGadgets, BfeCostsPerLevel) {
  for (bool isSigned : {false, true}) {
    Fixture f;
    UnitWriter l1(f.w, 0), l2(f.w, 1);
    Field bus = f.bus;
    bus.dims = bfeBusDims(isSigned);
    auto r = buildBfe(l1, f.ctx, l2, f.ctx, {isSigned, f.a, f.b, f.c, bus, f.out});
    ASSERT_TRUE(r.ok()) << r.error().message;
    // Level 1: shift by pos (1,024 + 2 over 8 amount bits), 1 constant, m and r thermometers
    // (32 step pairs each), f (signed: 32 step pairs). Level 2: 1 constant + 32 keep selects
    // (signed: + 31 + 32 fill detectors).
    EXPECT_EQ(l1.used(), 1026 + 1 + 128 + (isSigned ? 64 : 0));
    EXPECT_EQ(l2.used(), 33 + (isSigned ? 63 : 0));
    EXPECT_EQ(r.value().onMin, 128.0);
    EXPECT_EQ(r.value().offMax, -128.0);
  }
}

TEST(AluBitsGadgets, AbsIsTheAdderThenASignMux) {
  CircuitWeights w(linearConfig(256, 3, 1024, 16));
  Fixture f;
  UnitWriter l1(w, 0), l2(w, 1), l3(w, 2);
  const Field bus{"bus", f.bus.offset, adderBusDims(32)};
  auto r = buildAbs(l1, f.ctx, l2, f.ctx, l3, f.ctx, {f.a, f.b, bus, f.c, f.out});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(l1.used(), 417);     // adder level 1 on zero + ~a
  EXPECT_EQ(l2.used(), 96);      // level 2: copy + step pair per bit, no carry out
  EXPECT_EQ(l3.used(), 2 * 32);  // mux {a, neg} by a_31
  // The mux's selector is a's bit 31: the neg input (index 1) is selected when it is +1.
  const std::string gate = w.layerTensor(2, "mlp.gate_proj.weight");
  EXPECT_EQ(w.get(gate, 32, f.a.at(31)).value(), 128.0f);
  EXPECT_EQ(w.get(gate, 0, f.a.at(31)).value(), -128.0f);
  Field narrow = f.out;
  narrow.dims = 16;
  UnitWriter m1(w, 0, 500), m2(w, 1, 200), m3(w, 2, 200);  // room for a whole abs
  auto bad = buildAbs(m1, f.ctx, m2, f.ctx, m3, f.ctx, {f.a, f.b, bus, f.c, narrow});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_NE(bad.error().message.find("out needs 32"), std::string::npos) << bad.error().message;
  EXPECT_EQ(m1.used(), 0);
}

TEST(AluBitsGadgets, ShiftAmountDetectorReadsEveryHighBitAndSelectsTheSourceBit) {
  Fixture f;
  UnitWriter u(f.w, 0);
  auto r = buildShift(u, *shiftSpecFor(machine::Op::Shl, f.a, f.b, f.c, f.out, Prior::Zero),
                      f.ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string gate = f.w.layerTensor(0, "mlp.gate_proj.weight");
  const std::string up = f.w.layerTensor(0, "mlp.up_proj.weight");
  const std::string down = f.w.layerTensor(0, "mlp.down_proj.weight");
  // Unit 32k + j selects for amount k, output bit j. k = 5 = 0b00101.
  const int k5j7 = 32 * 5 + 7, k5j3 = 32 * 5 + 3;
  const float pattern[5] = {128, -128, 128, -128, -128};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.w.get(gate, k5j7, f.b.at(i)).value(), pattern[i]) << i;
  for (int i = 5; i < 32; ++i) EXPECT_EQ(f.w.get(gate, k5j7, f.b.at(i)).value(), -128.0f) << i;
  EXPECT_EQ(f.w.get(gate, k5j7, f.ballast.at(0)).value(), -31 * 128.0f);  // N = 32 literals − 31
  // j = 7 ≥ k: up = a bit 2, down +u/(λ²G) on out bit 7.
  EXPECT_EQ(f.w.get(up, k5j7, f.a.at(2)).value(), 1.0f);
  EXPECT_EQ(f.w.get(down, f.out.at(7), k5j7).value(), 0.125f);
  // j = 3 < k: a zero shifts in, up = ballast, down −u/(λ²G).
  EXPECT_EQ(f.w.get(up, k5j3, f.ballast.at(0)).value(), 1.0f);
  EXPECT_EQ(f.w.get(up, k5j3, f.a.at(0)).value(), 0.0f);
  EXPECT_EQ(f.w.get(down, f.out.at(3), k5j3).value(), -0.125f);
  // The >= 32 pair (units 1024, 1025): G/2 on each high bit, −2u to every output.
  EXPECT_EQ(f.w.get(gate, 1024, f.b.at(5)).value(), 64.0f);
  EXPECT_EQ(f.w.get(gate, 1024, f.b.at(4)).value(), 0.0f);
  EXPECT_EQ(f.w.get(down, f.out.at(0), 1024).value(), -0.125f);
  EXPECT_EQ(f.w.get(down, f.out.at(0), 1025).value(), 0.125f);
}

TEST(AluBitsGadgets, ShiftSpecForMapsTheIsaShiftsAndNothingElse) {
  Fixture f;
  auto shl = shiftSpecFor(machine::Op::Shl, f.a, f.b, f.c, f.out, Prior::Zero);
  ASSERT_TRUE(shl.has_value());
  EXPECT_EQ(shl->dir, ShiftDir::Left);
  EXPECT_EQ(shl->main.offset, f.a.offset);
  EXPECT_EQ(shl->fillKind, ShiftFill::Zero);
  EXPECT_EQ(shl->rule, ShiftAmount::Clamp);
  EXPECT_EQ(shl->amount.offset, f.b.offset);
  EXPECT_EQ(shiftSpecFor(machine::Op::ShrS, f.a, f.b, f.c, f.out, Prior::Zero)->fillKind,
            ShiftFill::Sign);
  auto shfl = shiftSpecFor(machine::Op::ShfLW, f.a, f.b, f.c, f.out, Prior::Zero);
  ASSERT_TRUE(shfl.has_value());
  EXPECT_EQ(shfl->main.offset, f.b.offset);  // high word of {b, a} << k
  EXPECT_EQ(shfl->fill.offset, f.a.offset);
  EXPECT_EQ(shfl->rule, ShiftAmount::Wrap);
  EXPECT_EQ(shfl->amount.offset, f.c.offset);
  auto shfr = shiftSpecFor(machine::Op::ShfRW, f.a, f.b, f.c, f.out, Prior::Zero);
  ASSERT_TRUE(shfr.has_value());
  EXPECT_EQ(shfr->dir, ShiftDir::Right);
  EXPECT_EQ(shfr->main.offset, f.a.offset);
  EXPECT_FALSE(shiftSpecFor(machine::Op::Add, f.a, f.b, f.c, f.out, Prior::Zero).has_value());
}

TEST(AluBitsGadgets, RefusesBadSpecsWithoutWritingAUnit) {
  Fixture f;
  UnitWriter u(f.w, 0);
  auto expectUsage = [](const Expected<GadgetReport>& r, const char* what) {
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().kind, ErrorKind::Usage) << what;
  };
  ShiftSpec funnelClamp = *shiftSpecFor(machine::Op::ShfLW, f.a, f.b, f.c, f.out, Prior::Zero);
  funnelClamp.rule = ShiftAmount::Clamp;
  expectUsage(buildShift(u, funnelClamp, f.ctx), "a clamped funnel");
  ShiftSpec narrow = *shiftSpecFor(machine::Op::Shl, f.a, f.b, f.c, f.out, Prior::Zero);
  narrow.amount.dims = 4;
  expectUsage(buildShift(u, narrow, f.ctx), "a 4-bit amount");
  narrow = *shiftSpecFor(machine::Op::Shl, f.a, f.b, f.c, f.out, Prior::Zero);
  narrow.main.dims = 16;
  expectUsage(buildShift(u, narrow, f.ctx), "a 16-bit word");
  Field five = f.out;
  five.dims = 5;
  expectUsage(buildPopc(u, {f.a, five, Prior::Zero}, f.ctx), "popc of 32 bits into 5");
  expectUsage(buildPriority(u, {PriorityOp::Clz, f.a, five, Prior::Zero}, f.ctx), "clz into 5");
  expectUsage(buildBitwise(u, {BitwiseOp::And, f.a, five, f.out, Prior::Zero}, f.ctx),
              "and of unequal widths");
  Field nibbles = f.c;
  nibbles.dims = 8;
  expectUsage(buildPrmt(u, {f.a, f.b, nibbles, f.out, Prior::Zero}, f.ctx), "prmt with 2 nibbles");
  UnitWriter l2(f.w, 1);
  expectUsage(buildBfe(u, f.ctx, l2, f.ctx, {false, f.a, f.b, f.c, f.bus, f.out}),
              "bfe.u with the signed bus width");
  EXPECT_EQ(u.used(), 0);
  EXPECT_EQ(l2.used(), 0);
}

TEST(AluBitsGadgets, RefusesAGainBelowRuleR2AndAFullLayer) {
  Fixture f;
  UnitWriter u(f.w, 0);
  MlpContext low = f.ctx;
  low.gain = 64;
  auto r = buildPopc(u, {f.a, f.out, Prior::Zero}, low);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  CircuitWeights small(linearConfig(256, 1, 1000, 16));
  UnitWriter full(small, 0);
  auto shift = buildShift(full, *shiftSpecFor(machine::Op::Shl, f.a, f.b, f.c, f.out, Prior::Zero),
                          f.ctx);
  ASSERT_FALSE(shift.ok());
  EXPECT_NE(shift.error().message.find("only 1000 units"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::circuit
