// qgpu/circuit/tests/adder_test.cpp — the two-level 32-bit adder (circuit/logic.h) through
// model::Decoder: two linear_attention layers (GDN zero; layer 0's MLP = level 1, layer 1's =
// level 2), hidden 256 in the full layout (every dim ±16, the bus and outputs written over +16
// pads with Prior::Replace, so λ = 1 at both MLPs and every probe reads exactly ±1).
//
// Each token of a checkpoint is one (a, b, cin) input; a checkpoint holds 2,048 of them and the
// test runs ~100k through 49 checkpoints (the weights of the layers are the same; only the
// embedding changes). Checkpoint 0 holds the edge cases: 0xffffffff + 1, 0x7fffffff + 1,
// alternating patterns, every single carry chain (length 1..32 at every start bit, by operand
// and by carry-in), 0 + 0, max + max. Expected sums are plain uint64_t arithmetic.
//
// What it pins down: every sum bit and the carry out are exactly ±1 on every input in fp32 and
// bf16 (prefill for all, decode and mixed for 256 edge cases), a − b via ~b and carry-in 1
// likewise, and the unclamped twin (single units instead of step pairs:
// output ∝ margin) is not exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
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

struct Input {
  uint32_t a = 0, b = 0;
  bool cin = false;
};

struct Layout {
  Field ballast, a, b, cin, bus, out, cout;
};

Layout layout() {
  FieldAllocator alloc(kHidden);
  return {alloc.take("ballast", 4).value(), alloc.take("a", kBits).value(),
          alloc.take("b", kBits).value(),   alloc.take("cin", 1).value(),
          alloc.take("bus", adderBusDims(kBits)).value(), alloc.take("out", kBits).value(),
          alloc.take("cout", 1).value()};
}

enum class Mode { Add, Sub };

struct Gadget {
  CircuitWeights weights;
  GadgetReport report;
  int units1 = 0, units2 = 0;
};

Gadget gadget(Mode mode, bool unclamped) {
  const Layout l = layout();
  Gadget g{CircuitWeights(config(kHidden, 2, 512, kVocab)), {}, 0, 0};
  MlpContext ctx{l.ballast, 1.0, 128, kUnit, false};
  UnitWriter level1(g.weights, 0), level2(g.weights, 1);
  AdderSpec s;
  s.a = l.a;
  s.b = l.b;
  if (mode == Mode::Add) {
    s.cin = l.cin;
  } else {
    s.invertB = true;
    s.carryIn = true;
  }
  s.bus = l.bus;
  s.out = l.out;
  s.cout = l.cout;
  s.busPrior = s.outPrior = Prior::Replace;
  s.unclamped = unclamped;
  auto r = buildAdder(level1, ctx, level2, ctx, s);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (r.ok()) g.report = r.value();
  g.units1 = level1.used();
  g.units2 = level2.used();
  probe(g.weights, 0, l.out);
  probe(g.weights, kBits, l.cout);
  return g;
}

std::string checkpoint(const Gadget& g, const std::vector<Input>& inputs, const std::string& name) {
  const Layout l = layout();
  CircuitWeights w = g.weights;
  for (size_t t = 0; t < inputs.size(); ++t) {
    const auto tok = static_cast<int64_t>(t);
    fillRow(w, tok, kUnit);
    setSigns(w, tok, l.a, inputs[t].a, kUnit);
    setSigns(w, tok, l.b, inputs[t].b, kUnit);
    setSigns(w, tok, l.cin, inputs[t].cin ? 1 : 0, kUnit);
  }
  return write(w, name);
}

std::vector<Input> edgeCases(std::mt19937& rng) {
  std::vector<Input> v = {{0xffffffffu, 1, false}, {0x7fffffffu, 1, false}, {0, 0, false},
                          {0, 0, true},            {0xffffffffu, 0xffffffffu, true},
                          {0xffffffffu, 0, true},  {0xaaaaaaaau, 0x55555555u, false},
                          {0xaaaaaaaau, 0x55555555u, true}, {0x55555555u, 0x55555555u, false},
                          {0x80000000u, 0x80000000u, false}, {0xffffffffu, 0xffffffffu, false}};
  for (int start = 0; start < kBits; ++start)
    for (int len = 1; start + len <= kBits; ++len) {
      const uint32_t run = static_cast<uint32_t>(((uint64_t{1} << len) - 1) << start);
      v.push_back({run, 1u << start, false});  // a carry generated at `start`, run `len` bits
      if (start == 0) v.push_back({run, 0, true});  // the same chain from the carry-in
    }
  while (v.size() < kVocab)
    v.push_back({static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), rng() % 2 == 1});
  v.resize(kVocab);
  return v;
}

std::vector<Input> randomInputs(std::mt19937& rng) {
  std::vector<Input> v(kVocab);
  for (Input& in : v) in = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), rng() % 2 == 1};
  return v;
}

// The expected 33 bits (sum, carry out), from uint64_t arithmetic.
std::vector<bool> expected(const Input& in, Mode mode) {
  uint64_t sum = 0;
  bool cout = false;
  if (mode == Mode::Add) {
    const uint64_t s = uint64_t{in.a} + in.b + (in.cin ? 1 : 0);
    sum = s & 0xffffffffu;
    cout = (s >> 32) != 0;
  } else {
    sum = static_cast<uint32_t>(in.a - in.b);
    cout = in.a >= in.b;  // no borrow
  }
  std::vector<bool> bits = bitsOf(sum, kBits);
  bits.push_back(cout);
  return bits;
}

void check(SignCheck& c, const std::vector<Input>& inputs, size_t n,
           const std::vector<std::vector<float>>& rows, Mode mode) {
  ASSERT_EQ(rows.size(), n);
  for (size_t t = 0; t < n; ++t)
    checkBits(c, rows[t], expected(inputs[t], mode), 1.0,
              "a=" + std::to_string(inputs[t].a) + " b=" + std::to_string(inputs[t].b) +
                  " cin=" + std::to_string(inputs[t].cin));
}

std::vector<int64_t> tokens(size_t n) {
  std::vector<int64_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int64_t>(i);
  return t;
}

// LibTorch's bf16 matmuls on this CPU run ~20x slower than fp32 (16 s for one 2,048-token
// checkpoint), so by default the test runs fp32 on 8 checkpoints (16,384 inputs) and bf16 on
// checkpoint 0 (every edge case + random fill); QGPU_CIRCUIT_FULL=1 runs the 100,352-input
// measurement of docs/circuit.md §9 in both dtypes (about 10 minutes here). Per commit bf16 also
// stops after the first 640 inputs of checkpoint 0 (all 571 edge cases) and runs the decode and
// mixed paths in fp32 only (an MLP-only gadget has no state that the paths could treat apart).
int checkpointsFor(ComputeDtype dtype, Mode mode) {
  const bool full = harness::fullInputs();
  if (dtype == ComputeDtype::BF16) return full ? 49 : 1;
  return full ? 49 : mode == Mode::Add ? 8 : 2;
}

void runMany(const Gadget& g, Mode mode, uint32_t seed, const char* name) {
  std::mt19937 rng(seed);
  SignCheck byDtype[2];
  size_t ran[2] = {0, 0};
  const int checkpoints = std::max(checkpointsFor(kDtypes[0], mode), checkpointsFor(kDtypes[1], mode));
  for (int k = 0; k < checkpoints; ++k) {
    std::vector<Input> inputs = k == 0 ? edgeCases(rng) : randomInputs(rng);
    if (k == 0 && mode == Mode::Sub) {  // a == b, 0 − 1, the signed boundary both ways
      inputs[0] = {5, 5, false};
      inputs[1] = {0, 1, false};
      inputs[2] = {0x80000000u, 0x7fffffffu, false};
      inputs[3] = {0x7fffffffu, 0x80000000u, false};
    }
    const std::string dir = checkpoint(g, inputs, name);
    for (int d = 0; d < 2; ++d) {
      if (k >= checkpointsFor(kDtypes[d], mode)) continue;
      auto dec = load(dir, kDtypes[d]);
      ASSERT_NE(dec, nullptr);
      const bool full = harness::fullInputs();
      const size_t n = kDtypes[d] == ComputeDtype::BF16 && !full ? 640 : kVocab;
      check(byDtype[d], inputs, n, run(*dec, tokens(n), Path::Prefill, kBits + 1), mode);
      ran[d] += n;
      if (k == 0 && mode == Mode::Add && (kDtypes[d] == ComputeDtype::F32 || full))
        for (Path path : {Path::Decode, Path::Mixed}) {
          SignCheck c;
          check(c, inputs, 256, run(*dec, tokens(256), path, kBits + 1), mode);
          EXPECT_TRUE(c.ok()) << computeDtypeName(kDtypes[d]) << " " << pathName(path) << ": "
                              << c.first;
          std::cout << "[" << name << "] " << computeDtypeName(kDtypes[d]) << " " << pathName(path)
                    << " (the first 256 edge cases): " << c.summary() << "\n";
        }
    }
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_TRUE(byDtype[d].ok()) << computeDtypeName(kDtypes[d]) << ": " << byDtype[d].first;
    std::cout << "[" << name << "] " << computeDtypeName(kDtypes[d]) << " prefill, "
              << ran[d] << " inputs: " << byDtype[d].summary() << "\n";
  }
}

TEST(AdderGadget, CostsTwoLayersAndIsExactOnEdgeCasesAndRandomAddsInFp32AndBf16) {
  Gadget g = gadget(Mode::Add, false);
  // Level 1: 80 bus cancels + 1 constant + 8 nibbles x 52; level 2: 33 cancels + 32 x 3 + 3.
  EXPECT_EQ(g.units1, 80 + 1 + 8 * 52);
  EXPECT_EQ(g.units2, 33 + 32 * 3 + 3);
  EXPECT_EQ(g.report.onMin, 128.0);
  EXPECT_EQ(g.report.offMax, -128.0);
  std::cout << "[adder] units: level 1 " << g.units1 << ", level 2 " << g.units2
            << "; bus dims " << adderBusDims(kBits) << "\n";
  runMany(g, Mode::Add, 17, "adder");
}

TEST(AdderGadget, SubtractsThroughInvertedOperandAndCarryIn) {
  runMany(gadget(Mode::Sub, false), Mode::Sub, 19, "sub");
}

TEST(AdderGadget, FailingTwinUnclampedCarriesAreNotExact) {
  Gadget g = gadget(Mode::Add, true);
  std::mt19937 rng(17);
  const std::vector<Input> inputs = edgeCases(rng);
  const std::string dir = checkpoint(g, inputs, "adder_twin");
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);

    ASSERT_NE(dec, nullptr);
    SignCheck c;
    check(c, inputs, kVocab, run(*dec, tokens(kVocab), Path::Prefill, kBits + 1), Mode::Add);
    EXPECT_FALSE(c.ok()) << computeDtypeName(dtype);
    std::cout << "[adder twin unclamped] " << computeDtypeName(dtype) << ": " << c.summary() << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
