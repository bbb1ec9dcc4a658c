// qgpu/circuit/tests/shift_test.cpp — the one-layer shifter of circuit/alu_bits.h through
// model::Decoder: shl, shr.u, shr.s by b (isa.def: b >= 32 gives 0, or the sign for shr.s) and the
// funnel shifts shf.l / shf.r of {b, a} by c & 31, all five in one linear_attention layer's MLP
// (specs from shiftSpecFor, the op -> spec map the compiler uses), hidden 272 in the full layout.
//
// Inputs: every amount 0..31 on 0, ~0, 1, 0x80000000 and random words; amounts >= 32 that a
// shifter reading only the low bits would get wrong (32, 33, 63, 64, 255, 256, every 2^k for
// k >= 5, 0x80000000, 0xffffffff, random multiples of 32); c with random high bits (the funnel
// must ignore them); then random. Expected words are plain expressions below.
// QGPU_CIRCUIT_FULL=1: 6 checkpoints (12,288 inputs per op) in fp32, the first two (4,096) in bf16.
//
// The lane-shared shifter (buildShiftPrep in layer 0, buildWindow in layer 1): one shifter for
// all five ops, the op chosen per token by an opcode one-hot (or none: the result is 0), on the
// same inputs.
//
// What it pins down: every bit exactly ±1 in fp32 and bf16 × prefill / decode / mixed, and two
// twins fail: a shl whose amount wraps (c & 31 rule instead of isa.def's clamp) on amounts >= 32,
// and the low-gain shifter (rule R2).
#include <gtest/gtest.h>

#include <random>

#include "circuit/tests/alu_bits_bench.h"

namespace qgpu::circuit {
namespace {

using namespace alubench;

constexpr int kHidden = 272;

uint32_t shl(const Operands& o) { return o.b >= 32 ? 0u : o.a << o.b; }
uint32_t shrU(const Operands& o) { return o.b >= 32 ? 0u : o.a >> o.b; }
uint32_t shrS(const Operands& o) {
  const auto sa = static_cast<int32_t>(o.a);
  return static_cast<uint32_t>(sa >> (o.b >= 32 ? 31 : o.b));
}
uint32_t shfL(const Operands& o) {  // high word of the 64-bit {b, a} << (c & 31)
  const uint64_t wide = (static_cast<uint64_t>(o.b) << 32) | o.a;
  return static_cast<uint32_t>((wide << (o.c & 31)) >> 32);
}
uint32_t shfR(const Operands& o) {  // low word of {b, a} >> (c & 31)
  const uint64_t wide = (static_cast<uint64_t>(o.b) << 32) | o.a;
  return static_cast<uint32_t>(wide >> (o.c & 31));
}

struct ShiftCase {
  machine::Op op;
  const char* name;
  uint32_t (*expected)(const Operands&);
};
constexpr ShiftCase kOps[] = {{machine::Op::Shl, "shl", shl},
                       {machine::Op::ShrU, "shr.u", shrU},
                       {machine::Op::ShrS, "shr.s", shrS},
                       {machine::Op::ShfLW, "shf.l", shfL},
                       {machine::Op::ShfRW, "shf.r", shfR}};

struct Built {
  std::unique_ptr<Bench> bench;
  int units = 0;
  GadgetReport report;
};

Built build(bool lowGain) {
  Built out{std::make_unique<Bench>(kHidden, 1, 5376), 0, {}};
  Bench& b = *out.bench;
  MlpContext ctx = b.ctx;
  ctx.lowGainTwin = lowGain;
  UnitWriter units(b.weights, 0);
  for (const ShiftCase& op : kOps) {
    const Field res = b.result(op.name, op.expected);
    auto spec = shiftSpecFor(op.op, b.a, b.b, b.c, res, Prior::Replace);
    EXPECT_TRUE(spec.has_value()) << op.name;
    if (!spec) continue;
    auto r = buildShift(units, *spec, ctx);
    expectOk(r, op.name);
    if (r.ok()) out.report += r.value();
  }
  out.units = units.used();
  return out;
}

std::vector<Operands> inputs(uint32_t seed, bool edges) {
  std::mt19937 rng(seed);
  auto r32 = [&] { return static_cast<uint32_t>(rng()); };
  std::vector<Operands> v;
  if (edges) {
    for (uint32_t k = 0; k < 32; ++k) {
      for (uint32_t a : {0u, 0xffffffffu, 1u, 0x80000000u, 0x7fffffffu}) v.push_back({a, k, k});
      for (int i = 0; i < 4; ++i) v.push_back({r32(), k, k | (r32() & ~31u)});
    }
    std::vector<uint32_t> big = {32, 33, 63, 64, 100, 255, 256, 0x80000000u, 0xffffffffu,
                                 0x7fffffffu, 0xffffffe0u};
    for (int k = 5; k < 32; ++k) big.push_back(1u << k);
    for (int i = 0; i < 16; ++i) big.push_back(r32() & ~31u);  // low five bits 0: k & 31 == 0
    for (uint32_t b : big)
      for (uint32_t a : {0xffffffffu, 0x80000000u, 0x7fffffffu, r32()}) v.push_back({a, b, r32()});
  }
  while (v.size() < kVocab) {
    const uint32_t a = r32(), c = r32();
    const uint32_t b = rng() % 4 == 0 ? r32() : r32() & 31;  // most amounts in range
    v.push_back({a, b, c});
  }
  v.resize(kVocab);
  return v;
}

TEST(ShiftGadget, FiveShiftsInOneLayerAreExactInFp32AndBf16OnEveryPath) {
  Built g = build(false);
  // Per op 32 amounts x 32 bits of selects; shl/shr.u/shr.s + the >= 32 step pair; + 32 cancels.
  EXPECT_EQ(g.units, 3 * (1024 + 2 + 32) + 2 * (1024 + 32));
  EXPECT_EQ(g.report.onMin, 128.0);
  EXPECT_EQ(g.report.offMax, -128.0);
  std::cout << "[shift] units in the layer: " << g.units << " (one shift: 1,024 selects + 2)\n";
  const int rounds = fullRun() ? 6 : 1;
  for (int k = 0; k < rounds; ++k) {
    const std::vector<Operands> in = inputs(53 + static_cast<uint32_t>(k), k == 0);
    const std::string dir = checkpoint(*g.bench, in, "shift");
    const std::vector<RunPlan> plan =
        k == 0 ? standardPlan(kVocab, fullRun() ? kVocab : 256)
               : k == 1 ? std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab},
                                               {ComputeDtype::BF16, Path::Prefill, kVocab}}
                        : std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab}};
    const auto checks = runPlans(*g.bench, in, dir, plan, "shift", k == 0);
    for (size_t r = 0; r < checks.size(); ++r)
      EXPECT_TRUE(checks[r].ok()) << g.bench->results[r].name << ": " << checks[r].first;
  }
}

// Every amount edge (0..31 on two words, and the amounts >= 32) under every opcode of the
// one-hot (and "no shift op"), then random operands with the opcode cycling.
std::vector<Operands> withOps(uint32_t seed) {
  std::mt19937 rng(seed);
  auto r32 = [&] { return static_cast<uint32_t>(rng()); };
  std::vector<uint32_t> amounts;
  for (uint32_t k = 0; k < 32; ++k) amounts.push_back(k);
  for (uint32_t k : {32u, 33u, 63u, 64u, 255u, 256u, 0x80000000u, 0xffffffffu, 0xffffffe0u})
    amounts.push_back(k);
  for (int k = 5; k < 32; ++k) amounts.push_back(1u << k);
  std::vector<Operands> v;
  for (uint32_t op = 0; op < 6; ++op) {
    const uint32_t bits = op == 5 ? 0u : 1u << op;
    for (uint32_t k : amounts) {
      v.push_back({r32() | 0x80000000u, k, k, bits});
      v.push_back({r32() & 0x7fffffffu, k, k | (r32() & ~31u), bits});
    }
  }
  while (v.size() < kVocab) {
    const uint32_t t = static_cast<uint32_t>(v.size());
    const uint32_t b = rng() % 4 == 0 ? r32() : r32() & 31;
    v.push_back({r32(), b, r32(), t % 6 == 5 ? 0u : 1u << (t % 6)});
  }
  v.resize(kVocab);
  return v;
}

uint32_t byOp(const Operands& o) {
  for (int i = 0; i < 5; ++i)
    if (o.op == 1u << i) return kOps[i].expected(o);
  return 0;  // not a shift op
}

struct Shared {
  std::unique_ptr<Bench> bench;
  int prepUnits = 0, windowUnits = 0;
};

Shared buildShared(bool lowGain) {
  Shared out{std::make_unique<Bench>(256, 2, 1152), 0, 0};
  Bench& b = *out.bench;
  MlpContext ctx = b.ctx;
  ctx.lowGainTwin = lowGain;
  b.op = b.take("op", 5);
  ShiftPrepSpec prep;
  prep.op = b.op;
  prep.a = b.a;
  prep.b = b.b;
  prep.c = b.c;
  prep.hi = b.take("hi", 32);
  prep.lo = b.take("lo", 32);
  prep.start = b.take("start", 33);
  prep.prior = Prior::Replace;
  UnitWriter l1(b.weights, 0), l2(b.weights, 1);
  expectOk(buildShiftPrep(l1, prep, ctx), "shift prep");
  expectOk(buildWindow(l2, {prep.lo, prep.hi, prep.start, b.result("shift by op", byOp),
                            Prior::Replace},
                       ctx),
           "window");
  out.prepUnits = l1.used();
  out.windowUnits = l2.used();
  return out;
}

TEST(ShiftGadget, LaneSharedShifterRunsAllFiveOpsInTwoLayersExactly) {
  for (int i = 0; i < 5; ++i) EXPECT_EQ(kShiftOps[i], kOps[i].op);  // the one-hot's order
  Shared g = buildShared(false);
  // Prep: 97 cancels + 1 constant + 1 + 3 x 32 hi/lo selects + 4 x 32 detectors + 2 pairs.
  EXPECT_EQ(g.prepUnits, 97 + 1 + 1 + 96 + 128 + 4);
  EXPECT_EQ(g.windowUnits, 32 + 1 + 33 * 32);
  std::cout << "[lane-shared shifter] units: prep " << g.prepUnits << ", window "
            << g.windowUnits << "\n";
  const int rounds = fullRun() ? 6 : 1;
  for (int k = 0; k < rounds; ++k) {
    const std::vector<Operands> in = withOps(57 + static_cast<uint32_t>(k));
    const std::string dir = checkpoint(*g.bench, in, "shift_shared");
    const std::vector<RunPlan> plan =
        k == 0 ? standardPlan(kVocab, fullRun() ? kVocab : 256)
               : k == 1 ? std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab},
                                               {ComputeDtype::BF16, Path::Prefill, kVocab}}
                        : std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab}};
    const auto checks = runPlans(*g.bench, in, dir, plan, "shift shared", k == 0);
    EXPECT_TRUE(checks[0].ok()) << checks[0].first;
  }
}

TEST(ShiftGadget, FailingTwinLaneSharedShifterAtLowGainIsNotExact) {
  Shared g = buildShared(true);
  const std::vector<Operands> in = withOps(57);
  const std::string dir = checkpoint(*g.bench, in, "shift_shared_twin");
  const auto checks = runPlans(*g.bench, in, dir, {{ComputeDtype::F32, Path::Prefill, 512}},
                               "shift shared twin low gain");
  EXPECT_FALSE(checks[0].ok());
}

TEST(ShiftGadget, FailingTwinAWrappingShlIsWrongOnAmountsOf32AndMore) {
  Bench b(kHidden, 1, 1280);
  UnitWriter units(b.weights, 0);
  ShiftSpec wrap = *shiftSpecFor(machine::Op::Shl, b.a, b.b, b.c, b.result("shl", shl),
                                 Prior::Replace);
  wrap.rule = ShiftAmount::Wrap;  // reads b & 31: shl by 32 would be shl by 0
  expectOk(buildShift(units, wrap, b.ctx), "wrapping shl");
  const std::vector<Operands> in = inputs(53, true);
  const std::string dir = checkpoint(b, in, "shift_twin_wrap");
  const auto checks = runPlans(b, in, dir, {{ComputeDtype::F32, Path::Prefill, kVocab}}, "shift twin wrap");
  EXPECT_FALSE(checks[0].ok());
  EXPECT_GT(checks[0].wrongSign, 0);
}

TEST(ShiftGadget, FailingTwinLowGainIsNotExact) {
  Built g = build(true);
  const std::vector<Operands> in = inputs(53, true);
  const std::string dir = checkpoint(*g.bench, in, "shift_twin");
  const auto checks = runPlans(*g.bench, in, dir, {{ComputeDtype::F32, Path::Prefill, 256}},
                               "shift twin low gain");
  for (size_t r = 0; r < checks.size(); ++r) EXPECT_FALSE(checks[r].ok()) << g.bench->results[r].name;
}

}  // namespace
}  // namespace qgpu::circuit
