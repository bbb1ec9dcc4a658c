// qgpu/circuit/tests/compare_test.cpp — the comparator and the multiplexer (circuit/logic.h)
// through model::Decoder: two linear_attention layers (GDN zero), hidden 256, full layout (every
// dim ±16, pads +16, outputs written with Prior::Replace: λ = 1 everywhere, probes read ±1).
//
// Comparator: six instances (eq ne lt.u le.u lt.s le.s) on the same 32-bit operands; level 1 in
// layer 0, level 2 in layer 1; each on a bus of its own, or all six on one level 1 (eq writes the
// bus, lt.s the signed top nibble, the others read them: CompareSpec::busWritten, top). Inputs: a
// == b, a = b ± 1, a and b differing in exactly one bit (every bit, both ways), the signed/unsigned
// boundaries (0, 1, 0x7fffffff, 0x80000000, 0xffffffff against each other), then random pairs (1 in
// 8 with b = a). Expected results come from uint32_t / int32_t comparisons in the test.
// Multiplexer: in layer 0, four 8-bit fields selected by a one-hot selector and by a 2-bit
// binary selector (both from the embedding), every selector value on random fields.
//
// Twins: the unclamped comparator (output ∝ carry margin) and the low-gain mux must not be exact.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "circuit/logic.h"
#include "circuit/tests/harness.h"

namespace qgpu::circuit {
namespace {

using namespace harness;

constexpr int kHidden = 256;
constexpr int kBits = 32;
constexpr int kVocab = 2048;
constexpr float kUnit = 16;
constexpr CompareOp kOps[] = {CompareOp::Eq,  CompareOp::Ne,  CompareOp::LtU,
                              CompareOp::LeU, CompareOp::LtS, CompareOp::LeS};
constexpr int kNumOps = 6;
constexpr int kMuxIn = 4, kMuxBits = 8;

struct Input {
  uint32_t a = 0, b = 0;
  uint16_t fields[kMuxIn] = {};
  int sel = 0;
};

struct Layout {
  Field ballast, a, b, buses[kNumOps], outs[kNumOps], fields[kMuxIn], oneHot, binary, muxOne,
      muxBin, sharedBus, sharedTop;
};

Layout layout() {
  FieldAllocator al(kHidden);
  Layout l;
  l.ballast = al.take("ballast", 4).value();
  l.a = al.take("a", kBits).value();
  l.b = al.take("b", kBits).value();
  for (int i = 0; i < kNumOps; ++i) {
    l.buses[i] = al.take("bus", compareBusDims(kBits)).value();
    l.outs[i] = al.take("out", 1).value();
  }
  for (Field& f : l.fields) f = al.take("field", kMuxBits).value();
  l.oneHot = al.take("onehot", kMuxIn).value();
  l.binary = al.take("binary", 2).value();
  l.muxOne = al.take("mux1", kMuxBits).value();
  l.muxBin = al.take("mux2", kMuxBits).value();
  l.sharedBus = al.take("shared bus", compareBusDims(kBits)).value();
  l.sharedTop = al.take("shared top", 2).value();
  return l;
}

constexpr int kProbes = kNumOps + 2 * kMuxBits;

// How the six compares get their level 1.
enum class Level1 : uint8_t { OwnBus, Shared };

// The six compares' specs: on their own buses, or on one level 1 (logic.h shareLevel1: eq
// writes the unsigned bus, ne, lt.u and le.u read it; lt.s writes the signed top nibble and reads
// the bus below it, le.s reads both).
CompareSpec compareSpec(const Layout& l, int i, Level1 level1) {
  CompareSpec s;
  s.op = kOps[i];
  s.a = l.a;
  s.b = l.b;
  s.bus = l.buses[i];
  s.out = l.outs[i];
  s.busPrior = s.outPrior = Prior::Replace;
  if (level1 == Level1::Shared) {
    EXPECT_TRUE(shareLevel1(s, l.sharedBus, l.sharedTop).ok());
  }
  return s;
}

std::string build(const std::string& name, const std::vector<Input>& inputs, bool unclamped,
                  bool lowGainMux, Level1 level1 = Level1::OwnBus) {
  const Layout l = layout();
  CircuitWeights w(config(kHidden, 2, 384, kVocab));
  const MlpContext ctx{l.ballast, 1.0, 128, kUnit, false};
  MlpContext muxCtx = ctx;
  muxCtx.lowGainTwin = lowGainMux;
  UnitWriter layer1(w, 0), layer2(w, 1);
  for (int i = 0; i < kNumOps; ++i) {
    CompareSpec s = compareSpec(l, i, level1);
    s.unclamped = unclamped;
    auto r = buildCompare(layer1, ctx, layer2, ctx, s);
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  // One level 1 for six: the bus's cancels, constant and 8 nibbles' two step pairs (49), the
  // top's (2 + 1 + 4).
  if (level1 == Level1::Shared) {
    EXPECT_EQ(layer1.used(), 49 + 7);
  }
  std::vector<Field> fields(std::begin(l.fields), std::end(l.fields));
  auto m1 =
      buildMux(layer1, {fields, l.oneHot, Selector::OneHot, l.muxOne, Prior::Replace}, muxCtx);
  EXPECT_TRUE(m1.ok()) << m1.error().message;
  auto m2 =
      buildMux(layer1, {fields, l.binary, Selector::Binary, l.muxBin, Prior::Replace}, muxCtx);
  EXPECT_TRUE(m2.ok()) << m2.error().message;
  if (m1.ok()) {
    EXPECT_EQ(m1.value().units, kMuxIn * kMuxBits + kMuxBits);
  }
  for (size_t t = 0; t < inputs.size(); ++t) {
    const auto tok = static_cast<int64_t>(t);
    const Input& in = inputs[t];
    fillRow(w, tok, kUnit);
    setSigns(w, tok, l.a, in.a, kUnit);
    setSigns(w, tok, l.b, in.b, kUnit);
    for (int i = 0; i < kMuxIn; ++i) setSigns(w, tok, l.fields[i], in.fields[i], kUnit);
    setSigns(w, tok, l.oneHot, 1u << in.sel, kUnit);
    setSigns(w, tok, l.binary, static_cast<uint64_t>(in.sel), kUnit);
  }
  for (int i = 0; i < kNumOps; ++i) probe(w, i, l.outs[i]);
  probe(w, kNumOps, l.muxOne);
  probe(w, kNumOps + kMuxBits, l.muxBin);
  return write(w, name);
}

std::vector<Input> inputs(uint32_t seed, bool edges) {
  std::mt19937 rng(seed);
  std::vector<Input> v;
  auto add = [&](uint32_t a, uint32_t b) {
    Input in{a, b, {}, static_cast<int>(v.size() % kMuxIn)};
    for (uint16_t& f : in.fields) f = static_cast<uint16_t>(rng());
    v.push_back(in);
  };
  if (edges) {
    const uint32_t special[] = {0, 1, 2, 0x7ffffffeu, 0x7fffffffu, 0x80000000u, 0x80000001u,
                                0xfffffffeu, 0xffffffffu, 0x0000ffffu, 0xffff0000u};
    for (uint32_t a : special)
      for (uint32_t b : special) add(a, b);
    for (int bit = 0; bit < kBits; ++bit) {
      const uint32_t x = static_cast<uint32_t>(rng());
      add(x, x ^ (1u << bit));
      add(x ^ (1u << bit), x);
      add(x & ~(1u << bit), x | (1u << bit));
    }
    for (int i = 0; i < 64; ++i) {
      const uint32_t x = static_cast<uint32_t>(rng());
      add(x, x);
      add(x, x + 1);
      add(x + 1, x);
    }
  }
  while (v.size() < kVocab) {
    const uint32_t a = static_cast<uint32_t>(rng());
    add(a, rng() % 8 == 0 ? a : static_cast<uint32_t>(rng()));
  }
  v.resize(kVocab);
  return v;
}

std::vector<bool> expectedCompare(const Input& in) {
  const auto sa = static_cast<int32_t>(in.a), sb = static_cast<int32_t>(in.b);
  return {in.a == in.b, in.a != in.b, in.a < in.b, in.a <= in.b, sa < sb, sa <= sb};
}

struct Checks {
  SignCheck ops[kNumOps];
  SignCheck muxOne, muxBin;
  bool ok() const {
    for (const SignCheck& c : ops)
      if (!c.ok()) return false;
    return muxOne.ok() && muxBin.ok();
  }
};

void check(Checks& c, const std::vector<Input>& in, size_t n,
           const std::vector<std::vector<float>>& rows) {
  ASSERT_EQ(rows.size(), n);
  for (size_t t = 0; t < n; ++t) {
    const std::string where = "a=" + std::to_string(in[t].a) + " b=" + std::to_string(in[t].b);
    const std::vector<bool> e = expectedCompare(in[t]);
    for (int i = 0; i < kNumOps; ++i)
      checkBits(c.ops[i], {rows[t][static_cast<size_t>(i)]}, {e[static_cast<size_t>(i)]}, 1.0,
                where);
    const std::vector<bool> sel = bitsOf(in[t].fields[in[t].sel], kMuxBits);
    std::vector<float> one(rows[t].begin() + kNumOps, rows[t].begin() + kNumOps + kMuxBits);
    std::vector<float> bin(rows[t].begin() + kNumOps + kMuxBits, rows[t].end());
    checkBits(c.muxOne, one, sel, 1.0, where + " sel=" + std::to_string(in[t].sel));
    checkBits(c.muxBin, bin, sel, 1.0, where + " sel=" + std::to_string(in[t].sel));
  }
}

std::vector<int64_t> tokens(size_t n) {
  std::vector<int64_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int64_t>(i);
  return t;
}

// Every compare's bits exact in `c`; printed after `label` where `print`.
void expectCompares(const Checks& c, ComputeDtype dtype, Path path, const std::string& label,
                    bool print) {
  for (int i = 0; i < kNumOps; ++i) {
    const std::string where = label + compareOpName(kOps[i]) + "] " + computeDtypeName(dtype) +
                              " " + pathName(path) + ": ";
    EXPECT_TRUE(c.ops[i].ok()) << where << c.ops[i].first;
    if (print) std::cout << where << c.ops[i].summary() << "\n";
  }
}

TEST(CompareGadget, SixComparisonsAndTwoMuxesAreExactInFp32AndBf16) {
  for (int k = 0; k < 3; ++k) {
    const std::vector<Input> in = inputs(31 + static_cast<uint32_t>(k), k == 0);
    const std::string dir = build("compare", in, false, false);
    for (ComputeDtype dtype : kDtypes) {
      if (dtype == ComputeDtype::BF16 && k > 0) continue;  // bf16 is ~20x slower on this CPU
      auto dec = load(dir, dtype);
      ASSERT_NE(dec, nullptr);
      for (Path path : kPaths) {
        if (path != Path::Prefill && k > 0) continue;
        const size_t n = path == Path::Prefill ? kVocab : 256;
        Checks c;
        check(c, in, n, run(*dec, tokens(n), path, kProbes));
        expectCompares(c, dtype, path, "[compare ", k == 0);
        EXPECT_TRUE(c.muxOne.ok()) << c.muxOne.first;
        EXPECT_TRUE(c.muxBin.ok()) << c.muxBin.first;
        if (k == 0)
          std::cout << "[mux one-hot 4x8] " << computeDtypeName(dtype) << " " << pathName(path)
                    << ": " << c.muxOne.summary() << "\n[mux binary 4x8] "
                    << computeDtypeName(dtype) << " " << pathName(path) << ": "
                    << c.muxBin.summary() << "\n";
      }
    }
  }
}

// The six on one level 1 (the ALU's form, alu_stage.h S1): the edge inputs and random pairs, both
// dtypes, every path.
TEST(CompareGadget, SixComparisonsOnOneLevel1AreExactInFp32AndBf16) {
  const std::vector<Input> in = inputs(37, true);
  const std::string dir = build("compare_shared", in, false, false, Level1::Shared);
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : kPaths) {
      const size_t n = path == Path::Prefill ? kVocab : 256;
      Checks c;
      check(c, in, n, run(*dec, tokens(n), path, kProbes));
      expectCompares(c, dtype, path, "[compare, one level 1, ", true);
    }
  }
}

TEST(CompareGadget, FailingTwinsUnclampedCompareAndLowGainMuxAreNotExact) {
  const std::vector<Input> in = inputs(31, true);
  const std::string dir = build("compare_twin", in, true, true);
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    Checks c;
    check(c, in, 512, run(*dec, tokens(512), Path::Prefill, kProbes));
    EXPECT_FALSE(c.ops[2].ok()) << "lt.u " << computeDtypeName(dtype);
    EXPECT_FALSE(c.muxOne.ok()) << computeDtypeName(dtype);
    std::cout << "[compare twin unclamped lt.u] " << computeDtypeName(dtype) << ": "
              << c.ops[2].summary() << "\n[mux twin low gain] " << computeDtypeName(dtype) << ": "
              << c.muxOne.summary() << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
