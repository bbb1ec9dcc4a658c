// qgpu/circuit/tests/guard_test.cpp — guarded units (circuit/units.h UnitGuard) through
// model::Decoder: two op kinds' gadgets write ONE 32-dim field, each guarded by its kind's dim, in
// one linear_attention layer (GDN zero), hidden 512 in the full layout (every dim ±16, λ = 1).
//
// Kind A writes a random 8 → 32-bit table of the input (logic.h lookup: detectors, Replace's
// cancels); kind B writes [popcount(in) ≥ j] on bit j − 1 for j = 1..8 and 0 above (a cancel, a
// constant −u and 8 step pairs: the memory stage's idiom). Every token carries an input, a kind
// (A, B or none) and a prior word in the shared field. What it pins down, on every (input, kind)
// — 768 tokens, shuffled, 12 chunks — in fp32 and bf16, prefill, decode and mixed: an A token
// reads A's word, a B token B's, a token of neither its prior word (no unit touched the dims),
// each bit exactly ±1. Expected words come from plain C++, not from the gadgets. The failing twin
// (the same gadgets unguarded) writes both kinds onto the dims and must give wrong bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <iostream>
#include <random>

#include "circuit/logic.h"
#include "circuit/tests/harness.h"

namespace qgpu::circuit {
namespace {

using namespace harness;

constexpr int kHidden = 512;
constexpr int kBits = 8;
constexpr int kInputs = 1 << kBits;
constexpr int kWord = 32;
constexpr float kUnit = 16;
enum Kind : int { kA, kB, kNone };
constexpr int kTokens = 3 * kInputs;  // token = kind · 256 + input

std::vector<uint32_t> tableA() {
  std::mt19937 rng(11);
  std::vector<uint32_t> t(kInputs);
  for (uint32_t& w : t) w = static_cast<uint32_t>(rng());
  return t;
}
uint32_t wordB(uint32_t in) {
  const int pop = std::popcount(in);
  return pop == 0 ? 0u : (1u << pop) - 1;  // [pop ≥ j] on bit j − 1
}
uint32_t prior(int64_t token) {
  return static_cast<uint32_t>(token) * 2654435761u;
}

uint32_t expected(int64_t token) {
  const uint32_t in = static_cast<uint32_t>(token % kInputs);
  switch (token / kInputs) {
    case kA:
      return tableA()[in];
    case kB:
      return wordB(in);
    default:
      return prior(token);
  }
}

std::string build(const std::string& name, bool guarded) {
  FieldAllocator alloc(kHidden);
  const Field ballast = alloc.take("ballast", 4).value(), in = alloc.take("in", kBits).value();
  const Field kind = alloc.take("kind", 2).value(), out = alloc.take("out", kWord).value();
  CircuitWeights w(config(kHidden, 1, 1024, kTokens));
  const MlpContext ctx{ballast, 1.0, 128, kUnit};
  UnitWriter units(w, 0);
  {
    if (guarded) units.setGuard(UnitGuard{kind.at(kA), 1, ballast, 1.0});
    auto a = buildLookup(units, {in, out, tableA(), Prior::Replace}, ctx);
    EXPECT_TRUE(a.ok()) << a.error().message;
  }
  {
    if (guarded) units.setGuard(UnitGuard{kind.at(kB), 1, ballast, 1.0});
    EXPECT_TRUE(buildCancel(units, out, ctx).ok());
    std::vector<Output> low;
    for (int i = 0; i < kWord; ++i) low.push_back({out.at(i), -1});
    EXPECT_TRUE(addConstant(units, ctx, low).ok());
    for (int j = 1; j <= kBits; ++j) {
      LinearForm n;  // Σ bits − j + 1, bit = (x̂ + 1)/2
      for (int i = 0; i < kBits; ++i) n.terms.push_back({in.at(i), 0.5});
      n.constant = 0.5 * kBits - j + 1;
      auto s = addStep(units, ctx, n, {{ballast.at(0), 1.0f}}, {{out.at(j - 1), 2}});
      EXPECT_TRUE(s.ok()) << s.error().message;
    }
  }
  units.setGuard(std::nullopt);
  for (int64_t tok = 0; tok < kTokens; ++tok) {
    fillRow(w, tok, kUnit);
    setSigns(w, tok, in, static_cast<uint64_t>(tok % kInputs), kUnit);
    const int k = static_cast<int>(tok / kInputs);
    setSigns(w, tok, kind, k == kA ? 1u : k == kB ? 2u : 0u, kUnit);
    setSigns(w, tok, out, prior(tok), kUnit);
  }
  probe(w, 0, out);
  return write(w, name);
}

std::vector<int64_t> sequence() {
  std::vector<int64_t> s(kTokens);
  for (int i = 0; i < kTokens; ++i) s[static_cast<size_t>(i)] = i;
  std::shuffle(s.begin(), s.end(), std::mt19937(13));
  return s;
}

SignCheck checkRun(const std::vector<int64_t>& seq, const std::vector<std::vector<float>>& rows) {
  SignCheck c;
  for (size_t p = 0; p < seq.size(); ++p)
    checkBits(c, rows[p], bitsOf(expected(seq[p]), kWord), 1.0,
              "position " + std::to_string(p) + " token " + std::to_string(seq[p]));
  return c;
}

TEST(UnitGuard, TwoKindsShareOneFieldExactlyInFp32AndBf16OnEveryPath) {
  const std::string dir = build("guard", true);
  const std::vector<int64_t> seq = sequence();
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : kPaths) {
      const SignCheck c = checkRun(seq, run(*dec, seq, path, kWord));
      EXPECT_TRUE(c.ok()) << computeDtypeName(dtype) << " " << pathName(path) << ": " << c.first;
      std::cout << "[guard] " << computeDtypeName(dtype) << " " << pathName(path) << ": "
                << c.summary() << "\n";
    }
  }
}

TEST(UnitGuard, FailingTwinUnguardedKindsCorruptTheSharedField) {
  const std::string dir = build("guard_twin", false);
  const std::vector<int64_t> seq = sequence();
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    const SignCheck c = checkRun(seq, run(*dec, seq, Path::Prefill, kWord));
    EXPECT_GT(c.wrongSign + c.inexact, 0) << computeDtypeName(dtype);
    std::cout << "[guard twin] " << computeDtypeName(dtype) << ": " << c.summary() << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
