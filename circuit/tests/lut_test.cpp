// qgpu/circuit/tests/lut_test.cpp — the decode and lookup gadgets (circuit/logic.h) through
// model::Decoder: one linear_attention layer (GDN zero, MLP = the gadgets), hidden 512 in the full
// layout (every dim ±16, pads +16, so λ = 1 at the MLP and every probe reads exactly ±1).
//
// What it pins down: on EVERY 8-bit input (each of the 256 tokens, twice, shuffled: 512 positions
// = 8 chunks), in fp32 and bf16, prefill, decode and mixed, the one-hot decode has +1 exactly at
// the input's index and −1 everywhere else, and a random 8 → 32-bit table (plus three fixed
// functions: popcount, parity, x·3 mod 256) gives exactly its word, bit for bit and magnitude
// for magnitude. Expected words come from plain C++ over the table, not from the gadget.
// The failing twin (λG = 4, rule R2 broken) must give inexact or wrong bits.
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
constexpr float kUnit = 16;

struct Layout {
  Field ballast, in, decoded, table;
};

std::vector<uint32_t> randomTable() {
  std::mt19937 rng(3);
  std::vector<uint32_t> t(kInputs);
  for (uint32_t p = 0; p < kInputs; ++p) {
    const uint32_t fixed =
        static_cast<uint32_t>(std::popcount(p)) | (std::popcount(p) % 2) << 4 | ((p * 3) & 0xff) << 8;
    t[p] = fixed | (rng() & 0xffff0000u) | ((rng() & 0x7) << 5);
  }
  return t;
}

struct Built {
  std::string dir;
  GadgetReport decode, lookup;
  int units = 0;
};

Built build(const std::string& name, bool lowGainTwin) {
  FieldAllocator alloc(kHidden);
  Layout l{alloc.take("ballast", 4).value(), alloc.take("in", kBits).value(),
           alloc.take("decoded", kInputs).value(), alloc.take("table", 32).value()};
  CircuitWeights w(config(kHidden, 1, 1024, kInputs + 32));
  MlpContext ctx{l.ballast, 1.0, 128, kUnit, lowGainTwin};
  UnitWriter units(w, 0);
  Built b;
  auto d = buildDecode(units, {l.in, l.decoded, Prior::Replace}, ctx);
  EXPECT_TRUE(d.ok()) << d.error().message;
  auto t = buildLookup(units, {l.in, l.table, randomTable(), Prior::Replace}, ctx);
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (d.ok()) b.decode = d.value();
  if (t.ok()) b.lookup = t.value();
  b.units = units.used();
  for (int64_t tok = 0; tok < kInputs; ++tok) {
    fillRow(w, tok, kUnit);
    setSigns(w, tok, l.in, static_cast<uint64_t>(tok), kUnit);
  }
  probe(w, 0, l.decoded);
  probe(w, kInputs, l.table);
  b.dir = write(w, name);
  return b;
}

std::vector<int64_t> sequence() {
  std::vector<int64_t> s;
  std::mt19937 rng(5);
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> one(kInputs);
    for (int i = 0; i < kInputs; ++i) one[static_cast<size_t>(i)] = i;
    std::shuffle(one.begin(), one.end(), rng);
    s.insert(s.end(), one.begin(), one.end());
  }
  return s;
}

// Decode and table checks over one run.
std::pair<SignCheck, SignCheck> checkRun(const std::vector<int64_t>& seq,
                                         const std::vector<std::vector<float>>& rows) {
  const std::vector<uint32_t> table = randomTable();
  SignCheck dec, tab;
  for (size_t p = 0; p < seq.size(); ++p) {
    const int64_t x = seq[p];
    std::vector<bool> oneHot(kInputs, false);
    oneHot[static_cast<size_t>(x)] = true;
    const std::string where = "position " + std::to_string(p) + " input " + std::to_string(x);
    checkBits(dec, rows[p], oneHot, 1.0, where);
    std::vector<float> t(rows[p].begin() + kInputs, rows[p].end());
    checkBits(tab, t, bitsOf(table[static_cast<size_t>(x)], 32), 1.0, where);
  }
  return {dec, tab};
}

TEST(LookupGadget, DecodeAndTableAreExactOnEveryInputInFp32AndBf16OnEveryPath) {
  Built b = build("lut", false);
  // 256 detectors + 1 constant (decode), 256 detectors (table), one cancel unit per output dim.
  EXPECT_EQ(b.decode.units, 257 + 256);
  EXPECT_EQ(b.lookup.units, 256 + 32);
  EXPECT_EQ(b.decode.onMin, 128.0);
  EXPECT_EQ(b.decode.offMax, -128.0);
  const std::vector<int64_t> seq = sequence();
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> byPath[3];
    for (Path path : kPaths) {
      auto rows = run(*dec, seq, path, kInputs + 32);
      ASSERT_EQ(rows.size(), seq.size());
      auto [d, t] = checkRun(seq, rows);
      EXPECT_TRUE(d.ok()) << computeDtypeName(dtype) << " " << pathName(path) << ": " << d.first;
      EXPECT_TRUE(t.ok()) << computeDtypeName(dtype) << " " << pathName(path) << ": " << t.first;
      std::cout << "[decode 8->256] " << computeDtypeName(dtype) << " " << pathName(path) << ": "
                << d.summary() << "\n[lookup 8->32] " << computeDtypeName(dtype) << " "
                << pathName(path) << ": " << t.summary() << "\n";
      byPath[static_cast<int>(path)] = std::move(rows);
    }
    EXPECT_TRUE(byPath[0] == byPath[1]) << computeDtypeName(dtype);
    EXPECT_TRUE(byPath[0] == byPath[2]) << computeDtypeName(dtype);
  }
}

TEST(LookupGadget, FailingTwinLowGainIsNotExact) {
  Built b = build("lut_twin", true);
  const std::vector<int64_t> seq = sequence();
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    auto [d, t] = checkRun(seq, run(*dec, seq, Path::Prefill, kInputs + 32));
    EXPECT_FALSE(d.ok()) << computeDtypeName(dtype);
    EXPECT_FALSE(t.ok()) << computeDtypeName(dtype);
    std::cout << "[lookup twin lambda*G=4] " << computeDtypeName(dtype) << ": decode "
              << d.summary() << "; table " << t.summary() << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
