// qgpu/circuit/tests/abs_test.cpp — neg and abs of circuit/alu_bits.h through model::Decoder:
// three linear_attention layers (GDN zero): layers 0 and 1 the adder's two levels computing
// neg = 0 + ~a + 1 (the zero operand is the bench's b field, held at 0 on every token), layer 2
// the mux by a's sign bit; hidden 256 in the full layout (λ = 1, probes ±1).
//
// Inputs: 0, 1, −1, INT_MIN, INT_MAX, INT_MIN + 1, every single bit and every run from the top,
// then random words. Expected words: 0u − a and (int32_t) a < 0 ? 0u − a : a (abs(INT_MIN) =
// INT_MIN, isa.def).
//
// What it pins down: neg and abs exactly ±1 per bit in fp32 and bf16 × prefill / decode / mixed;
// the low-gain twin is not exact.
#include <gtest/gtest.h>

#include <random>

#include "circuit/tests/alu_bits_bench.h"

namespace qgpu::circuit {
namespace {

using namespace alubench;

struct Built {
  std::unique_ptr<Bench> bench;
  int units[3] = {};
};

Built build(bool lowGain) {
  Built out{std::make_unique<Bench>(256, 3, 512), {}};
  Bench& b = *out.bench;
  MlpContext ctx = b.ctx;
  ctx.lowGainTwin = lowGain;
  UnitWriter l1(b.weights, 0), l2(b.weights, 1), l3(b.weights, 2);
  AbsSpec s;
  s.a = b.a;
  s.zero = b.b;
  s.bus = b.take("bus", adderBusDims(32));
  s.neg = b.result("neg", [](const Operands& o) { return 0u - o.a; });
  s.out = b.result("abs", [](const Operands& o) {
    return static_cast<int32_t>(o.a) < 0 ? 0u - o.a : o.a;
  });
  s.busPrior = s.outPrior = Prior::Replace;
  expectOk(buildAbs(l1, ctx, l2, ctx, l3, ctx, s), "abs");
  out.units[0] = l1.used();
  out.units[1] = l2.used();
  out.units[2] = l3.used();
  return out;
}

std::vector<Operands> inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Operands> v;
  for (uint32_t a : {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x80000001u, 2u, 0xfffffffeu})
    v.push_back({a, 0, 0});
  for (int k = 0; k < 32; ++k) {
    v.push_back({1u << k, 0, 0});
    v.push_back({0xffffffffu << k, 0, 0});
  }
  while (v.size() < kVocab) v.push_back({static_cast<uint32_t>(rng()), 0, 0});
  v.resize(kVocab);
  return v;
}

TEST(AbsGadget, NegAndAbsAreExactInFp32AndBf16OnEveryPath) {
  Built g = build(false);
  // Adder level 1 (80 cancels + 417), level 2 (32 cancels + 96), mux (32 cancels + 2 x 32).
  EXPECT_EQ(g.units[0], 80 + 417);
  EXPECT_EQ(g.units[1], 32 + 96);
  EXPECT_EQ(g.units[2], 32 + 64);
  std::cout << "[abs] units: " << g.units[0] << " + " << g.units[1] << " + " << g.units[2] << "\n";
  const std::vector<Operands> in = inputs(71);
  const std::string dir = checkpoint(*g.bench, in, "abs");
  const auto checks = runPlans(*g.bench, in, dir, standardPlan(kVocab, 512), "abs");
  for (size_t r = 0; r < checks.size(); ++r)
    EXPECT_TRUE(checks[r].ok()) << g.bench->results[r].name << ": " << checks[r].first;
}

TEST(AbsGadget, FailingTwinLowGainIsNotExact) {
  Built g = build(true);
  const std::vector<Operands> in = inputs(71);
  const std::string dir = checkpoint(*g.bench, in, "abs_twin");
  const auto checks = runPlans(*g.bench, in, dir, {{ComputeDtype::F32, Path::Prefill, 256}},
                               "abs twin low gain");
  for (size_t r = 0; r < checks.size(); ++r) EXPECT_FALSE(checks[r].ok()) << g.bench->results[r].name;
}

}  // namespace
}  // namespace qgpu::circuit
