// qgpu/circuit/tests/bfe_test.cpp — the two-level bit-field extract of circuit/alu_bits.h
// (bfe.u and bfe.s) through model::Decoder: level 1 in layer 0's MLP, level 2 in layer 1's,
// hidden 368 in the full layout (buses and outputs written with Prior::Replace, λ = 1 at both
// MLPs, probes ±1).
//
// Inputs: every (pos, len) with both in 0..40 (the boundaries pos + len = 32, len = 0, pos ≥ 32),
// then pos and len up to 255 and with bits above bit 7 set (ignored: pos = b & 0xff), on words
// with the top bit set and clear; QGPU_CIRCUIT_FULL=1 runs every (pos, len) in 0..255 × 0..255 in
// fp32 (65,536 inputs) and 6,144 in bf16 (two sweeps and the edges). The expected word is PTX's rule written out bit by bit.
//
// What it pins down: every bit of bfe.u and bfe.s exactly ±1 in fp32 and bf16 × prefill, decode
// and mixed; the low-gain twin is not exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "circuit/tests/alu_bits_bench.h"

namespace qgpu::circuit {
namespace {

using namespace alubench;

constexpr int kHidden = 368;

// PTX bfe.{u,s}32: pos = b & 0xff, len = c & 0xff; bit i = a[pos + i] for i < len and
// pos + i <= 31, else the sign bit: 0 for .u; for .s a[min(pos + len - 1, 31)], 0 when len = 0.
uint32_t extract(const Operands& o, bool isSigned) {
  const uint32_t pos = o.b & 0xff, len = o.c & 0xff;
  uint32_t sbit = 0;
  if (isSigned && len > 0) sbit = (o.a >> std::min(pos + len - 1, 31u)) & 1;
  uint32_t d = 0;
  for (uint32_t i = 0; i < 32; ++i) {
    const uint32_t bit = (i < len && pos + i <= 31) ? (o.a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

struct Built {
  std::unique_ptr<Bench> bench;
  int units1 = 0, units2 = 0;
};

Built build(bool lowGain) {
  Built out{std::make_unique<Bench>(kHidden, 2, 2688), 0, 0};
  Bench& b = *out.bench;
  MlpContext ctx = b.ctx;
  ctx.lowGainTwin = lowGain;
  UnitWriter level1(b.weights, 0), level2(b.weights, 1);
  for (bool isSigned : {false, true}) {
    BfeSpec s;
    s.isSigned = isSigned;
    s.a = b.a;
    s.b = b.b;
    s.c = b.c;
    s.bus = b.take(isSigned ? "bus.s" : "bus.u", bfeBusDims(isSigned));
    s.out = b.result(isSigned ? "bfe.s" : "bfe.u",
                     [isSigned](const Operands& o) { return extract(o, isSigned); });
    s.busPrior = s.outPrior = Prior::Replace;
    expectOk(buildBfe(level1, ctx, level2, ctx, s), isSigned ? "bfe.s" : "bfe.u");
  }
  out.units1 = level1.used();
  out.units2 = level2.used();
  return out;
}

// Checkpoint k of the full sweep: (pos, len) pairs 2048k .. 2048k + 2047 of 0..255 × 0..255.
std::vector<Operands> sweep(int k, std::mt19937& rng) {
  std::vector<Operands> v;
  for (int i = 0; i < kVocab; ++i) {
    const uint32_t pair = static_cast<uint32_t>(k * kVocab + i);
    v.push_back({static_cast<uint32_t>(rng()), pair >> 8, pair & 0xff});
  }
  return v;
}

std::vector<Operands> edges(std::mt19937& rng) {
  auto r32 = [&] { return static_cast<uint32_t>(rng()); };
  std::vector<Operands> v;
  for (uint32_t pos = 0; pos <= 40; ++pos)
    for (uint32_t len = 0; len <= 40; ++len) {
      const uint32_t a = v.size() % 2 == 0 ? r32() | 0x80000000u : r32() & 0x7fffffffu;
      v.push_back({a, pos, len});
    }
  const uint32_t wide[] = {0, 1, 31, 32, 33, 63, 64, 128, 200, 254, 255};
  for (uint32_t pos : wide)
    for (uint32_t len : wide) {
      v.push_back({r32(), pos, len});
      v.push_back({r32(), pos | (r32() << 8), len | (r32() << 8)});  // bits above 7 ignored
    }
  while (v.size() < kVocab) v.push_back({r32(), r32() % 48 | (r32() << 8), r32() % 48});
  v.resize(kVocab);
  return v;
}

TEST(BfeGadget, BfeUAndBfeSAreExactInFp32AndBf16OnEveryPath) {
  Built g = build(false);
  // Level 1: (32 cancels + 1,024 selects + 2) shift + 64|65 cancels + 1 constant + 64 m + 64 r
  // (+ 64 f signed). Level 2: 32 cancels + 1 + 32 keep (+ 31 + 32 fill detectors signed).
  EXPECT_EQ(g.units1, (1058 + 64 + 1 + 128) + (1058 + 65 + 1 + 128 + 64));
  EXPECT_EQ(g.units2, (32 + 1 + 32) + (32 + 1 + 32 + 31 + 32));
  std::cout << "[bfe] units: level 1 " << g.units1 << ", level 2 " << g.units2 << "\n";
  std::mt19937 rng(61);
  if (!fullRun()) {
    const std::vector<Operands> in = edges(rng);
    const std::string dir = checkpoint(*g.bench, in, "bfe");
    const auto checks = runPlans(*g.bench, in, dir, standardPlan(kVocab, 256), "bfe");
    for (size_t r = 0; r < checks.size(); ++r)
      EXPECT_TRUE(checks[r].ok()) << g.bench->results[r].name << ": " << checks[r].first;
    return;
  }
  std::vector<SignCheck> total(g.bench->results.size());
  for (int k = 0; k < 33; ++k) {  // 32 sweeps + the edge checkpoint
    const std::vector<Operands> in = k < 32 ? sweep(k, rng) : edges(rng);
    const std::string dir = checkpoint(*g.bench, in, "bfe");
    std::vector<RunPlan> plan = {{ComputeDtype::F32, Path::Prefill, kVocab}};
    if (k % 16 == 0) plan.push_back({ComputeDtype::BF16, Path::Prefill, kVocab});
    if (k == 32) plan = standardPlan(kVocab, kVocab);
    const auto checks = runPlans(*g.bench, in, dir, plan, "bfe full", k == 32);
    for (size_t r = 0; r < checks.size(); ++r) {
      EXPECT_TRUE(checks[r].ok()) << g.bench->results[r].name << ": " << checks[r].first;
      total[r].values += checks[r].values;
      total[r].wrongSign += checks[r].wrongSign;
      total[r].inexact += checks[r].inexact;
    }
  }
  for (size_t r = 0; r < total.size(); ++r)
    std::cout << "[bfe full " << g.bench->results[r].name << "] all runs: " << total[r].values
              << " bits, " << total[r].wrongSign << " wrong, " << total[r].inexact << " inexact\n";
}

TEST(BfeGadget, FailingTwinLowGainIsNotExact) {
  Built g = build(true);
  std::mt19937 rng(61);
  const std::vector<Operands> in = edges(rng);
  const std::string dir = checkpoint(*g.bench, in, "bfe_twin");
  const auto checks = runPlans(*g.bench, in, dir, {{ComputeDtype::F32, Path::Prefill, 512}},
                               "bfe twin low gain");
  for (size_t r = 0; r < checks.size(); ++r) EXPECT_FALSE(checks[r].ok()) << g.bench->results[r].name;
}

}  // namespace
}  // namespace qgpu::circuit
