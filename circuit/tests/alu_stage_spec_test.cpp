// qgpu/circuit/tests/alu_stage_spec_test.cpp — the torch-free checks of the ALU stage
// (circuit/alu_stage.h): the walk over oracle/isa.def (every ALU, compare, select and predicate
// op is computed by the stage unless it is on this file's own exclusion list, with its reason),
// the one-hot order the shifter reads, the units per layer (derived by hand below), and what is
// refused. The numerics run through model/ in alu_stage_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "circuit/alu_stage.h"
#include "circuit/alu_bits.h"
#include "circuit/config.h"
#include "oracle/machine.h"

namespace qgpu::circuit {
namespace {

using machine::Op;
using machine::OpClass;

// The ops of class Alu / Cmp / Sel / Pred the stage deliberately leaves to others, and why.
const std::set<Op> kDivisions = {Op::DivU, Op::DivS, Op::RemU, Op::RemS};    // host-expanded
const std::set<Op> kMultiplies = {Op::Mul, Op::Mad, Op::MulHiU, Op::MulHiS};  // the MUL stage

bool lanesOwnValueOp(Op op) {
  const OpClass c = machine::opInfo(op).cls;
  return c == OpClass::Alu || c == OpClass::Cmp || c == OpClass::Sel || c == OpClass::Pred;
}

TEST(AluStageOps, WalksIsaDefAndFailsForAnAluOpTheStageDoesNotCompute) {
  int computed = 0;
  for (int i = 0; i < machine::kNumOps; ++i) {
    const auto op = static_cast<Op>(i);
    const char* why = aluStageExclusion(op);
    const std::string name = machine::opInfo(op).mnemonic;
    const bool inList = std::find(aluStageOps().begin(), aluStageOps().end(), op) !=
                        aluStageOps().end();
    EXPECT_EQ(inList, why == nullptr) << name;
    if (lanesOwnValueOp(op) && !kDivisions.count(op) && !kMultiplies.count(op)) {
      EXPECT_EQ(why, nullptr) << name << " is an ALU op the stage does not compute: " << why;
      ++computed;
    } else {
      ASSERT_NE(why, nullptr) << name << " is not the ALU stage's, yet it claims it";
      const std::string reason = why;
      if (kDivisions.count(op)) {
        EXPECT_NE(reason.find("division"), std::string::npos) << name;
      }
      if (kMultiplies.count(op)) {
        EXPECT_NE(reason.find("MUL stage"), std::string::npos) << name;
      }
      if (machine::opInfo(op).cls == OpClass::Warp) {
        EXPECT_NE(reason.find("warp"), std::string::npos) << name;
      }
      std::cout << "[excluded] " << name << ": " << reason << "\n";
    }
  }
  EXPECT_EQ(computed, static_cast<int>(aluStageOps().size()));
  EXPECT_EQ(computed, 42);  // isa.def today: 33 Alu − 4 divisions − 4 multiplies + 10 Cmp + 1 Sel + 6 Pred
}

TEST(AluStageOps, TheOneHotStartsWithTheShiftsInTheShifterOrder) {
  ASSERT_GE(aluStageOps().size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(aluStageOps()[i], kShiftOps[i]);
}

TEST(AluStageOps, TheOpcodeFieldIsTheHeadWordsSevenBits) {
  EXPECT_EQ(kOpcodeBits, 7);  // docs/trace.md: head word bits 4..10
}

struct Fixture {
  // 4 lanes: 11 + 4 · 131 + aluStageBusDims(4) = 2,913 dims; S1, the largest, 5,056 units.
  explicit Fixture(int hidden = 2944, int units = 5056)
      : w(linearConfig(hidden, kAluStageLayers, units, 16)), alloc(hidden) {}
  CircuitWeights w;
  FieldAllocator alloc;
  Field ballast = alloc.take("ballast", 4).value();
  Field opcode = alloc.take("opcode", kOpcodeBits).value();
  MlpContext ctx{ballast, 1.0, 128, 16, false};
  AluStageSpec spec(int lanes, AluBusLayout layout = AluBusLayout::OneFieldPerValue) {
    AluStageSpec s;
    s.busLayout = layout;
    s.opcode = opcode;
    for (int l = 0; l < lanes; ++l) {
      const std::string p = "l" + std::to_string(l);
      AluLane lane;
      lane.a = alloc.take(p + "a", 32).value();
      lane.b = alloc.take(p + "b", 32).value();
      lane.c = alloc.take(p + "c", 32).value();
      lane.p = alloc.take(p + "p", 1).value();
      lane.q = alloc.take(p + "q", 1).value();
      lane.r = alloc.take(p + "r", 32).value();
      lane.s = alloc.take(p + "s", 1).value();
      s.lanes.push_back(lane);
    }
    s.bus = alloc.take("bus", aluStageBusDims(lanes, layout)).value();
    return s;
  }
};

TEST(AluStageCost, UnitsPerLayerAreTheHandSums) {
  Fixture f;
  const AluStageSpec s = f.spec(4);
  UnitWriter u0(f.w, 0), u1(f.w, 1), u2(f.w, 2), u3(f.w, 3);
  const AluLayer layers[] = {{&u0, f.ctx}, {&u1, f.ctx}, {&u2, f.ctx}, {&u3, f.ctx}};
  auto r = buildAluStage(layers, s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const int k = static_cast<int>(aluStageOps().size());
  // S0: decode 2k + 1 (cancel, constant, a detector per op); per lane the adder operands: 65
  // cancels + 1 constant + 6 detectors per bit + 3 for cin = 261; bfe.s level 1 without its
  // shifter 1,219 − 1,026 = 193 + 65 cancels; popc 65 + 32, clz 33 + 32, bfind 33 + 32, prmt
  // 288 + 32.
  const int s0Lane = 261 + 193 + 65 + 97 + 65 + 65 + 320;
  // S1 per lane: shift prep 230 + 97 + bfe's group (32 detectors + a step pair), adder level 1
  // 417 + 80, the comparators' one level 1: eq, lt.u, le.u's bus (33 + 16) and lt.s, le.s's top
  // nibble (a constant + two step pairs + 2 cancels); the result word begun: 32 cancels + 1
  // constant + popc's, clz's, bfind's and prmt's case per bit.
  const int s1Lane = 327 + 34 + 497 + 49 + 7 + 33 + 4 * 32;
  // S2 per lane: window 1,057 + 32, adder level 2 96 + 32, the comparators' level 2 (lt/le: a
  // step pair + constant + cancel = 4; eq: the detector + constant + cancel = 3).
  const int s2Lane = 1089 + 128 + 3 + 4 * 4;
  // S3 per lane: the predicate result's cancel + 1 constant; per result bit 22 cases + bfe's 3
  // (bfe.u keep, bfe.s keep and past-31 fill), + 31 bfe.s short fills (bits 1..31); 10 set + 7
  // pred logic + 2 pconst for the predicate result.
  const int s3Lane = 1 + 1 + 25 * 32 + 31 + 10 + 7 + 2;
  ASSERT_EQ(r.value().unitsPerLayer.size(), 4u);
  EXPECT_EQ(r.value().unitsPerLayer[0], 2 * k + 1 + 4 * s0Lane);
  EXPECT_EQ(r.value().unitsPerLayer[1], 4 * s1Lane);
  EXPECT_EQ(r.value().unitsPerLayer[2], 4 * s2Lane);
  EXPECT_EQ(r.value().unitsPerLayer[3], 4 * s3Lane);
  EXPECT_EQ(r.value().busDims, k + 4 * 522);
  EXPECT_EQ(r.value().gadget.onMin, 128);
  EXPECT_EQ(r.value().gadget.offMax, -128);
  for (int l = 0; l < 4; ++l)
    std::cout << "[alu stage] S" << l << ": " << r.value().unitsPerLayer[static_cast<size_t>(l)]
              << " units (4 lanes)\n";
}

// The bus by liveness (circuit/layout.h). Live after each stage layer, per lane (hand, from
// alu_stage.cpp's gadgets: who writes a field, who reads it last):
//   S0: x, y 64 + cin 1 + popc, clz, bfind, prmt 128 + bfe's m, r, f 65              = 258
//   S1: cin 1 (the adder's level 2 reads it) + 65 + prep 97 + adder bus 80
//       + the comparators' bus 16 and signed top 2 (popc .. prmt are read into the
//       result word here)                                                             = 261
//   S2: 65 + cmp 5 + sum 32 + the window 32                                            = 134
// plus the op one-hot (42) from S0 to S3: peak 42 + 4 · 261 = 1,086 after S1 (1,334 while the
// five compares had a level 1 each, 1,846 while S3 read popc .. prmt).
TEST(AluStageBus, LivenessPeakIsTheHandCountAndTheSpanIsMeasured) {
  const int k = static_cast<int>(aluStageOps().size());
  for (int lanes = 1; lanes <= 4; ++lanes) {
    auto plan = aluStageBusPlan(lanes, AluBusLayout::Liveness);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const LayoutReport r = plan->report();
    EXPECT_EQ(r.peak, k + lanes * 261) << lanes;
    EXPECT_EQ(pointName(r.peakAt), "L1.mlp") << lanes;
    // After S0..S3's MLPs (S3 reads the last bus fields: none is live after it).
    EXPECT_EQ(r.firstLayer, 0);
    EXPECT_EQ(r.liveAfterMlp,
              (std::vector<int>{k + lanes * 258, k + lanes * 261, k + lanes * 134, 0}));
    EXPECT_EQ(r.oneFieldPerValue, k + lanes * 522);
    EXPECT_EQ(aluStageBusDims(lanes, AluBusLayout::Liveness), r.span);
    EXPECT_EQ(r.span, r.peak);  // measured: the layout's tie-breaks leave no gap (layout.h)
    EXPECT_LT(r.span, aluStageBusDims(lanes)) << lanes;
    std::cout << "[alu bus] " << lanes << " lanes: peak " << r.peak << ", span " << r.span
              << ", fragmentation " << r.fragmentation << " (one field per value "
              << aluStageBusDims(lanes) << ")\n";
  }
  EXPECT_EQ(aluStageBusDims(4), k + 4 * 522);  // one field per value
}

TEST(AluStageBus, EveryFieldOnReusedDimsIsOnlyWrittenAfterItsPredecessorsLastRead) {
  // The layout's own invariant, checked pairwise on the placement (not by the allocator's
  // search): two fields that share a dim never have overlapping live ranges.
  auto plan = aluStageBusPlan(4, AluBusLayout::Liveness);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& ps = plan->placements();
  int shared = 0;
  for (size_t i = 0; i < ps.size(); ++i)
    for (size_t j = i + 1; j < ps.size(); ++j) {
      const Field& a = ps[i].field;
      const Field& b = ps[j].field;
      const bool overlapDims = a.offset < b.offset + b.dims && b.offset < a.offset + a.dims;
      if (!overlapDims) continue;
      ++shared;
      EXPECT_FALSE(conflicts(ps[i].range, ps[j].range)) << a.name << " and " << b.name;
    }
  EXPECT_GT(shared, 0);  // it does reuse
}

// By group (AluBusLayout::ByGroup): the groups' fields share dims while live (each group's ops
// alone write them), so after each stage layer a lane holds its widest group's fields (hand, from
// the entries above): S0 max(add's x, y, cin 65; the shifter's bfe m, r, f 65; popc, clz, bfind,
// prmt 32 each) = 65; S1 max(add's cin + adder bus 81; the shifter's 65 + prep 97 = 162; the
// compares' 18) = 162; S2 max(sum 32; cmp 5; the shifter's 65 + window 32 = 97) = 97. Peak
// 42 + 4 · 162 = 690.
TEST(AluStageBus, ByGroupPeakIsTheWidestGroupsHandCount) {
  const int k = static_cast<int>(aluStageOps().size());
  for (int lanes = 1; lanes <= 4; ++lanes) {
    auto plan = aluStageBusPlan(lanes, AluBusLayout::ByGroup);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const LayoutReport r = plan->report();
    EXPECT_EQ(r.liveAfterMlp,
              (std::vector<int>{k + lanes * 65, k + lanes * 162, k + lanes * 97, 0}));
    EXPECT_EQ(r.peak, k + lanes * 162) << lanes;
    EXPECT_EQ(aluStageBusDims(lanes, AluBusLayout::ByGroup), r.span);
    std::cout << "[alu bus] by group, " << lanes << " lanes: peak " << r.peak << ", span " << r.span
              << "\n";
  }
  EXPECT_EQ(aluStageBusDims(4, AluBusLayout::ByGroup), 690);
  // Two fields on one dim: disjoint live ranges, or two groups' (the one-hot is every group's).
  auto plan = aluStageBusPlan(4, AluBusLayout::ByGroup);
  ASSERT_TRUE(plan.ok());
  const auto& ps = plan->placements();
  int acrossGroups = 0;
  for (size_t i = 0; i < ps.size(); ++i)
    for (size_t j = i + 1; j < ps.size(); ++j) {
      const Field& a = ps[i].field;
      const Field& b = ps[j].field;
      if (a.offset >= b.offset + b.dims || b.offset >= a.offset + a.dims) continue;
      if (!conflicts(ps[i].range, ps[j].range)) continue;
      ++acrossGroups;
      EXPECT_TRUE(exclusiveKinds(a.kinds, b.kinds)) << a.name << " and " << b.name;
      EXPECT_NE(a.name.substr(0, 2), "op") << a.name;
    }
  EXPECT_GT(acrossGroups, 0);
}

TEST(AluStageOps, EveryGroupIsItsOwnKindAndTheGroupsCoverTheBusReaders) {
  std::set<uint32_t> kinds;
  for (int g = 0; g < kAluGroups; ++g) {
    const uint32_t kind = aluGroupKind(static_cast<AluGroup>(g));
    EXPECT_EQ(std::popcount(kind), 1);
    EXPECT_EQ(kind & kKindAlu, kind);
    kinds.insert(kind);
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kAluGroups));
  EXPECT_EQ(aluGroup(machine::Op::Sub), AluGroup::Add);
  EXPECT_EQ(aluGroup(machine::Op::MaxU), AluGroup::Compare);
  EXPECT_EQ(aluGroup(machine::Op::SetGeS), AluGroup::Compare);
  EXPECT_EQ(aluGroup(machine::Op::ShfRW), AluGroup::Shift);
  EXPECT_EQ(aluGroup(machine::Op::BfeS), AluGroup::Shift);
  EXPECT_EQ(aluGroup(machine::Op::Prmt), AluGroup::Prmt);
  EXPECT_EQ(aluGroup(machine::Op::Mov), std::nullopt);
  EXPECT_EQ(aluGroup(machine::Op::Selp), std::nullopt);
  EXPECT_EQ(aluGroup(machine::Op::Ld), std::nullopt);  // not a stage op
}

// The bus fields of each group, by hand from alu_stage.h's stage list: which ops read each.
const std::map<std::string, AluGroup> kGroupOf = {
    {"x", AluGroup::Add},          {"y", AluGroup::Add},         {"cin", AluGroup::Add},
    {"adder", AluGroup::Add},      {"sum", AluGroup::Add},       {"popc", AluGroup::Popc},
    {"clz", AluGroup::Clz},        {"bfind", AluGroup::Bfind},   {"prmt", AluGroup::Prmt},
    {"hi", AluGroup::Shift},       {"lo", AluGroup::Shift},      {"start", AluGroup::Shift},
    {"shifted", AluGroup::Shift},  {"bfe.mrf", AluGroup::Shift}, {"cmpbus", AluGroup::Compare},
    {"cmptop", AluGroup::Compare}, {"cmp", AluGroup::Compare}};

// With the group guards every unit that writes a group's bus field carries that group's guard,
// every other unit the stage's guard but r's and s's cancel and −u (read from the build's unit
// log). Checked on the liveness bus, where no two fields share a dim while live, so that each
// (layer, dim) a unit writes names one field; by group the same units share the dims.
TEST(AluStageGuards, EachGroupsWritersCarryItsOwnGuard) {
  Fixture f(2944, 5056);
  Field guard = f.alloc.take("isAlu", 1).value();
  Field groups = f.alloc.take("groups", kAluGroups).value();
  AluStageSpec s = f.spec(4, AluBusLayout::Liveness);
  s.guard = guard;
  s.groupGuard = groups;
  f.w.logUnits();
  UnitWriter u0(f.w, 0), u1(f.w, 1), u2(f.w, 2), u3(f.w, 3);
  const AluLayer layers[] = {{&u0, f.ctx}, {&u1, f.ctx}, {&u2, f.ctx}, {&u3, f.ctx}};
  auto r = buildAluStage(layers, s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto plan = aluStageBusPlan(4, AluBusLayout::Liveness);
  ASSERT_TRUE(plan.ok());
  // (stage layer, bus dim) → the guards its writers may carry: a group field's own group's, the
  // one-hot's the stage's (fields of two groups may share a dim while both are live).
  std::map<std::pair<int, int>, std::set<int>> allowed;
  for (const Placement& p : plan->placements()) {
    int want = guard.at(0);
    const std::string name = p.field.name.substr(p.field.name.find('.') + 1);  // "lane2.x": x
    if (const auto it = kGroupOf.find(name); it != kGroupOf.end())
      want = groups.at(static_cast<int>(it->second));
    for (int i = 0; i < p.field.dims; ++i)
      allowed[{p.range.write.layer, s.bus.at(p.field.at(i))}].insert(want);
  }
  std::set<int> rs;
  for (const AluLane& l : s.lanes)
    for (const Field* f : {&l.r, &l.s})
      for (int i = 0; i < f->dims; ++i) rs.insert(f->at(i));
  int underGroup = 0, unguarded = 0, wrong = 0;
  for (const CircuitWeights::UnitRecord& u : f.w.unitLog()) {
    bool ok = true, onBus = false;
    for (int d : u.writes) {
      if (rs.count(d) > 0) continue;
      const auto it = allowed.find({u.layer, d});
      onBus = true;
      ok = ok && it != allowed.end() && it->second.count(u.guardDim) > 0;
    }
    // Off the bus: r's and s's writers, under the stage's guard but their cancel and −u.
    if (!onBus) ok = u.guardDim == guard.at(0) || u.guardDim < 0;
    underGroup += onBus && u.guardDim != guard.at(0);
    unguarded += u.guardDim < 0;
    wrong += !ok;
  }
  EXPECT_EQ(unguarded, 4 * (32 + 1 + 1 + 1));  // per lane r's cancel and −u, s's
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(underGroup, 10000);
  std::cout << "[alu guards] " << underGroup << " units under a group's guard, "
            << f.w.unitLog().size() << " in all\n";
  EXPECT_EQ(allowed.size() > 0, true);
  // By group: the same units, and without the group guards refused.
  CircuitWeights w2(linearConfig(2944, kAluStageLayers, 5056, 16));
  UnitWriter v0(w2, 0), v1(w2, 1), v2(w2, 2), v3(w2, 3);
  const AluLayer byGroupLayers[] = {{&v0, f.ctx}, {&v1, f.ctx}, {&v2, f.ctx}, {&v3, f.ctx}};
  AluStageSpec byGroup = s;
  byGroup.busLayout = AluBusLayout::ByGroup;
  byGroup.bus.dims = aluStageBusDims(4, AluBusLayout::ByGroup);
  auto grouped = buildAluStage(byGroupLayers, byGroup);
  ASSERT_TRUE(grouped.ok()) << grouped.error().message;
  EXPECT_EQ(grouped->unitsPerLayer, r->unitsPerLayer);
  AluStageSpec noGroups = byGroup;
  noGroups.groupGuard = {};
  EXPECT_FALSE(buildAluStage(byGroupLayers, noGroups).ok());
}

TEST(AluStageCost, TheLivenessBusCostsTheSameUnits) {
  Fixture f(2944, 5056);
  const AluStageSpec s = f.spec(4, AluBusLayout::Liveness);
  UnitWriter u0(f.w, 0), u1(f.w, 1), u2(f.w, 2), u3(f.w, 3);
  const AluLayer layers[] = {{&u0, f.ctx}, {&u1, f.ctx}, {&u2, f.ctx}, {&u3, f.ctx}};
  auto r = buildAluStage(layers, s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const int k = static_cast<int>(aluStageOps().size());
  // As UnitsPerLayerAreTheHandSums: every bus write was a Replace already.
  EXPECT_EQ(r.value().unitsPerLayer,
            (std::vector<int>{2 * k + 1 + 4 * 1066, 4 * 1075, 4 * 1236, 4 * 852}));
  EXPECT_EQ(r.value().busDims, aluStageBusDims(4, AluBusLayout::Liveness));
  AluStageSpec wrong = s;  // twin: the one-field-per-value size with the liveness layout
  wrong.bus.dims = aluStageBusDims(4);
  EXPECT_FALSE(buildAluStage(layers, wrong).ok());
}

TEST(AluStageSpecs, RefusesWhatDoesNotFit) {
  Fixture f(1024, 1700);
  AluStageSpec s = f.spec(1);
  UnitWriter u0(f.w, 0), u1(f.w, 1), u2(f.w, 2), u3(f.w, 3);
  const AluLayer layers[] = {{&u0, f.ctx}, {&u1, f.ctx}, {&u2, f.ctx}, {&u3, f.ctx}};
  const std::string kUsage = kindName(ErrorKind::Usage), kOver = kindName(ErrorKind::OverLimit);
  auto kind = [&](std::span<const AluLayer> ls, const AluStageSpec& spec) {
    auto r = buildAluStage(ls, spec);
    return r.ok() ? std::string("ok") : std::string(kindName(r.error().kind));
  };
  EXPECT_EQ(kind(std::span(layers, 3), s), kUsage);  // three layers
  AluStageSpec narrow = s;
  narrow.opcode.dims = 6;
  EXPECT_EQ(kind(layers, narrow), kUsage);
  AluStageSpec bus = s;
  bus.bus.dims -= 1;
  EXPECT_EQ(kind(layers, bus), kUsage);
  AluStageSpec none = s;
  none.lanes.clear();
  EXPECT_EQ(kind(layers, none), kUsage);
  AluStageSpec five = s;
  for (int i = 0; i < 4; ++i) five.lanes.push_back(s.lanes[0]);
  EXPECT_EQ(kind(layers, five), kUsage);
  AluStageSpec wideP = s;
  wideP.lanes[0].p.dims = 2;
  EXPECT_EQ(kind(layers, wideP), kUsage);
  AluStageSpec wideGuard = s;
  wideGuard.guard = Field{"guard", 0, 2};  // one literal: 0 or 1 dim
  EXPECT_EQ(kind(layers, wideGuard), kUsage);
  MlpContext low = f.ctx;
  low.gain = 64;  // λG = 64 < 89
  const AluLayer lowLayers[] = {{&u0, low}, {&u1, f.ctx}, {&u2, f.ctx}, {&u3, f.ctx}};
  EXPECT_EQ(kind(lowLayers, s), kOver);
  // A layer without room: S0 of one lane needs 85 + 1,066 units.
  CircuitWeights small{linearConfig(1024, kAluStageLayers, 1000, 16)};
  UnitWriter v0(small, 0), v1(small, 1), v2(small, 2), v3(small, 3);
  const AluLayer tight[] = {{&v0, f.ctx}, {&v1, f.ctx}, {&v2, f.ctx}, {&v3, f.ctx}};
  EXPECT_EQ(kind(tight, s), kUsage);
}

}  // namespace
}  // namespace qgpu::circuit
