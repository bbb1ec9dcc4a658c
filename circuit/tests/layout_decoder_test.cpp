// qgpu/circuit/tests/layout_decoder_test.cpp — dims reused by liveness (circuit/layout.h) through
// model::Decoder: three linear_attention layers (GDN zero) of hidden 128 in the full layout
// (every dim ±16, pads +16: λ = 1 at every MLP), each MLP one 4 → 4-bit lookup (logic.h):
//   in [embedding, L0.mlp)  →  A = TA[in] [L0.mlp, L1.mlp)  →  B = TB[A] [L1.mlp, L2.mlp)
//   →  C = TC[B] [L2.mlp, the probe)
// The allocator puts in, A, B and C on the SAME four dims: each is written by the block that
// reads its predecessor last (a block reads its input before it adds to it), and written with
// Prior::Replace, whose cancel units remove the dead field's ±u exactly, as they remove a pad's.
//
// What it pins down: on every 4-bit input (16 tokens × 8, shuffled: 128 positions, two chunks),
// fp32 and bf16, prefill, decode and mixed, C is exactly TC[TB[TA[in]]] and every one of the
// 128 residual dims is exactly ±u after the last layer (the norm never moves). Expected words come
// from plain C++ over the three tables. Failing twins: (1) a field whose live range overlaps A's,
// pinned onto A's dims, is refused by the allocator (Usage, naming both); the same two fields
// forced onto one set of dims without the allocator give wrong bits through the decoder;
// (2) B written with Prior::Zero on A's reused dims is not exact (A's ±u is still there).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "circuit/layout.h"
#include "circuit/logic.h"
#include "circuit/tests/harness.h"

namespace qgpu::circuit {
namespace {

using namespace harness;

constexpr int kHidden = 128;
constexpr int kBits = 4;
constexpr int kInputs = 1 << kBits;
constexpr float kUnit = 16;
constexpr int kLayers = 3;

// Three fixed 4-bit tables (the expected values come from these, not from the gadget).
const std::vector<uint32_t> kTA = {7, 12, 0, 5, 9, 14, 3, 1, 15, 8, 2, 11, 6, 13, 4, 10};
const std::vector<uint32_t> kTB = {3, 3, 9, 0, 14, 7, 7, 1, 12, 5, 10, 15, 2, 8, 6, 11};
const std::vector<uint32_t> kTC = {10, 4, 1, 13, 0, 15, 6, 9, 2, 12, 5, 3, 8, 11, 14, 7};
uint32_t expected(int64_t x) { return kTC[kTB[kTA[static_cast<size_t>(x)]]]; }

struct Fields {
  Field ballast, in, a, b, c;
};

Expected<Fields> plan() {
  LayoutPlan p;
  const int ballast = p.add("ballast", 4, {kEmbedding, mlpAt(kLayers)});
  const int in = p.add("in", kBits, {kEmbedding, mlpAt(0)});
  const int a = p.add("a", kBits, {mlpAt(0), mlpAt(1)});
  const int b = p.add("b", kBits, {mlpAt(1), mlpAt(2)});
  const int c = p.add("c", kBits, {mlpAt(2), mlpAt(kLayers)});  // read by the probe
  QGPU_CHECK(p.solve(kHidden));
  return Fields{p.field(ballast), p.field(in), p.field(a), p.field(b), p.field(c)};
}

struct Variant {
  bool aliasD = false;      // twin 1: D = TA[in] written at L0, read at L2, on A's dims
  Prior bPrior = Prior::Replace;
};

std::string build(const std::string& name, const Fields& f, const Variant& v) {
  CircuitWeights w(config(kHidden, kLayers, 64, kHidden + kBits));
  MlpContext ctx{f.ballast, 1.0, 128, kUnit, false};
  UnitWriter u0(w, 0), u1(w, 1), u2(w, 2);
  auto check = [](const Expected<GadgetReport>& r) {
    EXPECT_TRUE(r.ok()) << r.error().message;
  };
  check(buildLookup(u0, {f.in, f.a, kTA, Prior::Replace}, ctx));
  if (v.aliasD) check(buildLookup(u0, {f.in, f.a, kTC, Prior::Replace}, ctx));  // D on A's dims
  check(buildLookup(u1, {f.a, f.b, kTB, v.bPrior}, ctx));
  check(buildLookup(u2, {f.b, f.c, kTC, Prior::Replace}, ctx));
  for (int64_t tok = 0; tok < kInputs; ++tok) {
    fillRow(w, tok, kUnit);
    setSigns(w, tok, f.in, static_cast<uint64_t>(tok), kUnit);
  }
  probe(w, 0, f.c);
  probe(w, kBits, Field{"all", 0, kHidden});
  return write(w, name);
}

std::vector<int64_t> sequence() {
  std::vector<int64_t> s;
  std::mt19937 rng(11);
  for (int rep = 0; rep < 8; ++rep) {
    std::vector<int64_t> one(kInputs);
    for (int i = 0; i < kInputs; ++i) one[static_cast<size_t>(i)] = i;
    std::shuffle(one.begin(), one.end(), rng);
    s.insert(s.end(), one.begin(), one.end());
  }
  return s;
}

std::pair<SignCheck, LayoutCheck> checkRun(const std::vector<int64_t>& seq,
                                           const std::vector<std::vector<float>>& rows) {
  SignCheck c;
  std::vector<std::vector<float>> all;
  for (size_t p = 0; p < seq.size(); ++p) {
    checkBits(c, rows[p], bitsOf(expected(seq[p]), kBits), 1.0,
              "position " + std::to_string(p) + " input " + std::to_string(seq[p]));
    all.emplace_back(rows[p].begin() + kBits, rows[p].end());
  }
  return {c, checkLayout(all, 1.0f)};
}

TEST(LayoutReuse, TheAllocatorPutsTheChainOnOneSetOfDims) {
  auto f = plan();
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->a.offset, f->in.offset);
  EXPECT_EQ(f->b.offset, f->in.offset);
  EXPECT_EQ(f->c.offset, f->in.offset);
  EXPECT_NE(f->ballast.offset, f->in.offset);
}

TEST(LayoutReuse, FieldsSharingDimsAcrossLayersAreExactInFp32AndBf16OnEveryPath) {
  auto f = plan();
  ASSERT_TRUE(f.ok()) << f.error().message;
  const std::string dir = build("layout_reuse", *f, {});
  const std::vector<int64_t> seq = sequence();
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : kPaths) {
      auto rows = run(*dec, seq, path, kBits + kHidden);
      ASSERT_EQ(rows.size(), seq.size());
      auto [c, layout] = checkRun(seq, rows);
      EXPECT_TRUE(c.ok()) << computeDtypeName(dtype) << " " << pathName(path) << ": " << c.summary();
      EXPECT_TRUE(layout.ok()) << computeDtypeName(dtype) << " " << pathName(path) << ": "
                               << layout.summary();
      std::cout << "[layout reuse] " << computeDtypeName(dtype) << " " << pathName(path) << ": "
                << c.summary() << "; residual " << layout.summary() << "\n";
    }
  }
}

TEST(LayoutReuse, TwinOverlappingRangesAreRefusedByTheAllocatorAndWrongWithoutIt) {
  LayoutPlan p;
  p.add("ballast", 4, {kEmbedding, mlpAt(kLayers)});
  p.add("in", kBits, {kEmbedding, mlpAt(0)});
  const int a = p.add("a", kBits, {mlpAt(0), mlpAt(1)});
  ASSERT_TRUE(p.solve(kHidden).ok());
  // A where the plan put it, and D, written at L0 and read at L2, pinned onto A's dims.
  LayoutPlan q;
  q.add("ballast", 4, {kEmbedding, mlpAt(kLayers)});
  q.add("in", kBits, {kEmbedding, mlpAt(0)});
  q.pin("a", kBits, {mlpAt(0), mlpAt(1)}, p.field(a).offset);
  q.pin("d", kBits, {mlpAt(0), mlpAt(2)}, p.field(a).offset);
  const Status st = q.solve(kHidden);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Usage);
  EXPECT_NE(st.error().message.find("'d'"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("'a'"), std::string::npos) << st.error().message;

  // Without the allocator: D's units land on A's dims anyway; the chain reads A + D.
  auto f = plan();
  ASSERT_TRUE(f.ok()) << f.error().message;
  Variant v;
  v.aliasD = true;
  const std::string dir = build("layout_reuse_alias", *f, v);
  const std::vector<int64_t> seq = sequence();
  auto dec = load(dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  auto [c, layout] = checkRun(seq, run(*dec, seq, Path::Prefill, kBits + kHidden));
  std::cout << "[layout reuse twin: overlap] " << c.summary() << "; residual " << layout.summary()
            << "\n";
  EXPECT_FALSE(c.ok() && layout.ok());
}

TEST(LayoutReuse, TwinPriorZeroOnAReusedDimIsNotExact) {
  auto f = plan();
  ASSERT_TRUE(f.ok()) << f.error().message;
  Variant v;
  v.bPrior = Prior::Zero;  // B does not cancel A's ±u
  const std::string dir = build("layout_reuse_zero", *f, v);
  const std::vector<int64_t> seq = sequence();
  auto dec = load(dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  auto [c, layout] = checkRun(seq, run(*dec, seq, Path::Prefill, kBits + kHidden));
  std::cout << "[layout reuse twin: Prior::Zero] " << c.summary() << "; residual "
            << layout.summary() << "\n";
  EXPECT_FALSE(c.ok() && layout.ok());
}

}  // namespace
}  // namespace qgpu::circuit
