// qgpu/circuit/tests/bitops_test.cpp — the one-layer bit gadgets of circuit/alu_bits.h (and, or,
// xor, not, popc, clz, bfind.u, brev, prmt) through model::Decoder: one linear_attention layer
// (GDN zero) whose MLP holds all nine, hidden 400 in the full layout (λ = 1, probes ±1).
//
// Inputs: 0, ~0, every single bit, every run from the top and from the bottom, a top bit k over
// random lower bits (every clz / bfind answer), alternating patterns; prmt selectors with every
// nibble value in every byte; then random words. Expected words are plain expressions below
// (a & b, a loop over bits, PTX's prmt rule written out), not the gadget's and not oracle/'s.
// QGPU_CIRCUIT_FULL=1: 6 checkpoints (12,288 inputs per op) in fp32, the first two (4,096) in bf16.
//
// What it pins down: every result bit of the nine ops is exactly ±1 (right sign, one magnitude)
// in fp32 and bf16 on the prefill, decode and mixed paths; the low-gain twin (λG = 4, rule R2
// broken) is not exact.
#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "circuit/tests/alu_bits_bench.h"

namespace qgpu::circuit {
namespace {

using namespace alubench;

constexpr int kHidden = 400;

uint32_t popcount(uint32_t a) {
  uint32_t n = 0;
  for (int i = 0; i < 32; ++i) n += (a >> i) & 1;
  return n;
}

uint32_t leadingZeros(uint32_t a) {
  uint32_t n = 0;
  for (int i = 31; i >= 0 && ((a >> i) & 1) == 0; --i) ++n;
  return n;
}

uint32_t reversed(uint32_t a) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
  return r;
}

// PTX prmt.b32, default mode: byte i = byte (c >> 4i) & 7 of the 8 bytes {b, a} (a = bytes 0..3),
// or, when bit 3 of that nibble is set, that byte's bit 7 replicated.
uint32_t permuted(uint32_t a, uint32_t b, uint32_t c) {
  const uint8_t bytes[8] = {static_cast<uint8_t>(a),       static_cast<uint8_t>(a >> 8),
                            static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 24),
                            static_cast<uint8_t>(b),       static_cast<uint8_t>(b >> 8),
                            static_cast<uint8_t>(b >> 16), static_cast<uint8_t>(b >> 24)};
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t sel = (c >> (4 * i)) & 0xf;
    uint32_t byte = bytes[sel & 7];
    if (sel & 8) byte = (byte & 0x80) != 0 ? 0xff : 0x00;
    d |= byte << (8 * i);
  }
  return d;
}

struct Built {
  std::unique_ptr<Bench> bench;
  int units = 0;
};

Built build(bool lowGain) {
  Built out{std::make_unique<Bench>(kHidden, 1, 1024), 0};
  Bench& b = *out.bench;
  MlpContext ctx = b.ctx;
  ctx.lowGainTwin = lowGain;
  UnitWriter units(b.weights, 0);
  const BitwiseOp ops[] = {BitwiseOp::And, BitwiseOp::Or, BitwiseOp::Xor, BitwiseOp::Not};
  const std::function<uint32_t(const Operands&)> plain[] = {
      [](const Operands& o) { return o.a & o.b; }, [](const Operands& o) { return o.a | o.b; },
      [](const Operands& o) { return o.a ^ o.b; }, [](const Operands& o) { return ~o.a; }};
  for (int i = 0; i < 4; ++i) {
    const Field res = b.result(bitwiseOpName(ops[i]), plain[i]);
    expectOk(buildBitwise(units, {ops[i], b.a, ops[i] == BitwiseOp::Not ? Field{} : b.b, res,
                                  Prior::Replace},
                          ctx),
             bitwiseOpName(ops[i]));
  }
  expectOk(buildPopc(units, {b.a, b.result("popc", [](const Operands& o) { return popcount(o.a); }),
                             Prior::Replace},
                     ctx),
           "popc");
  expectOk(buildPriority(units, {PriorityOp::Clz, b.a,
                                 b.result("clz", [](const Operands& o) { return leadingZeros(o.a); }),
                                 Prior::Replace},
                         ctx),
           "clz");
  expectOk(buildPriority(units, {PriorityOp::BfindU, b.a, b.result("bfind.u", [](const Operands& o) {
                                   return o.a == 0 ? 0xffffffffu : 31 - leadingZeros(o.a);
                                 }),
                                 Prior::Replace},
                         ctx),
           "bfind.u");
  expectOk(buildBrev(units, {b.a, b.result("brev", [](const Operands& o) { return reversed(o.a); }),
                             Prior::Replace},
                     ctx),
           "brev");
  expectOk(buildPrmt(units, {b.a, b.b, b.c,
                             b.result("prmt", [](const Operands& o) { return permuted(o.a, o.b, o.c); }),
                             Prior::Replace},
                     ctx),
           "prmt");
  out.units = units.used();
  return out;
}

std::vector<Operands> inputs(uint32_t seed, bool edges) {
  std::mt19937 rng(seed);
  auto r32 = [&] { return static_cast<uint32_t>(rng()); };
  std::vector<Operands> v;
  if (edges) {
    const uint32_t special[] = {0, 0xffffffffu, 0xaaaaaaaau, 0x55555555u, 0x80000000u, 1,
                                0x7fffffffu, 0x0000ffffu, 0xffff0000u, 0x00ff00ffu};
    for (uint32_t a : special)
      for (uint32_t b : special) v.push_back({a, b, r32()});
    for (int k = 0; k < 32; ++k) {
      const uint32_t below = k == 0 ? 0 : r32() & ((1u << k) - 1);
      v.push_back({1u << k, r32(), r32()});
      v.push_back({0xffffffffu >> k, r32(), r32()});
      v.push_back({0xffffffffu << k, r32(), r32()});
      v.push_back({(1u << k) | below, r32(), r32()});
    }
    for (uint32_t s = 0; s < 16; ++s) v.push_back({r32(), r32(), s * 0x1111u});  // every selector
    for (uint32_t s = 0; s < 16; ++s) v.push_back({r32() | 0x80808080u, r32(), s * 0x1111u});
  }
  while (v.size() < kVocab) v.push_back({r32(), r32(), r32()});
  v.resize(kVocab);
  return v;
}

TEST(BitopsGadgets, NineOneLayerOpsAreExactInFp32AndBf16OnEveryPath) {
  Built g = build(false);
  // and 33, or 33, xor 64, not 32, popc 65, clz 33, bfind 33, brev 32, prmt 288; 9 x 32 cancels.
  EXPECT_EQ(g.units, 33 + 33 + 64 + 32 + 65 + 33 + 33 + 32 + 288 + 9 * 32);
  std::cout << "[bitops] units in the layer: " << g.units << "\n";
  const int rounds = fullRun() ? 6 : 1;
  for (int k = 0; k < rounds; ++k) {
    const std::vector<Operands> in = inputs(41 + static_cast<uint32_t>(k), k == 0);
    const std::string dir = checkpoint(*g.bench, in, "bitops");
    const std::vector<RunPlan> plan =
        k == 0 ? standardPlan(kVocab, fullRun() ? kVocab : 512)
               : k == 1 ? std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab},
                                               {ComputeDtype::BF16, Path::Prefill, kVocab}}
                        : std::vector<RunPlan>{{ComputeDtype::F32, Path::Prefill, kVocab}};
    const auto checks = runPlans(*g.bench, in, dir, plan, "bitops", k == 0);
    for (size_t r = 0; r < checks.size(); ++r)
      EXPECT_TRUE(checks[r].ok()) << g.bench->results[r].name << ": " << checks[r].first;
  }
}

TEST(BitopsGadgets, FailingTwinLowGainIsNotExact) {
  Built g = build(true);
  const std::vector<Operands> in = inputs(41, true);
  const std::string dir = checkpoint(*g.bench, in, "bitops_twin");
  const auto checks = runPlans(*g.bench, in, dir, {{ComputeDtype::F32, Path::Prefill, 256},
                                                   {ComputeDtype::BF16, Path::Prefill, 128}},
                               "bitops twin");
  for (size_t r = 0; r < checks.size(); ++r)
    EXPECT_FALSE(checks[r].ok()) << g.bench->results[r].name;
}

}  // namespace
}  // namespace qgpu::circuit
