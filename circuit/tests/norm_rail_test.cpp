// qgpu/circuit/tests/norm_rail_test.cpp — one-row memory reads at key head dim 128 made exact by a
// norm rail (circuit/memory.h "Key head dim", ReadHeight::NormRail), through model::Decoder: a
// memory of 128 cells of 32-bit words (the register file's, the ROM's and the data memory's word)
// in one linear_attention layer of the full layout, read with the PadInverted readout every real
// memory uses, fp32 and bf16, chunked prefill (200 tokens: four 64-token chunks), recurrent
// decode and mixed.
//
// What it pins down:
//   - the plan: at dk 64 no rail (the one-row read is a power of two); at dk 128 a bf16 rail value
//     C that dominates the norm's mean and a gate zs ≥ 17 whose hot output is a power of two; dvs
//     that are no power of two and heads with no room for the rail channel refused;
//   - with the rail, every probed dim of every position exactly ±nominal (every read bit exactly
//     ±u, Σx² the layout's) and every read word right, the three paths bit for bit alike;
//   - the failing twin, the one-row Nominal read of 32-bit words at dk 128 (what the register
//     file, the ROM and the data memory built before the rail): words right, but fp32 read bits
//     ulps off ±u in more than one magnitude (the in-band gates `qgpu circuit margins` found
//     at `2b`, docs/circuit.md §9 "The norm rail").
// Expected words come from a plain array replaying the token list, not from the gadget.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <iostream>
#include <random>

#include "circuit/memory.h"
#include "circuit/tests/harness.h"
#include "model/tiny.h"

namespace qgpu::circuit {
namespace {

using namespace harness;

constexpr int kHidden = 128;
constexpr int kAddrBits = 7;  // 128 cells: every key row of the head
constexpr int kWordBits = 32;
constexpr int64_t kVocab = 640;  // random (write?, cell, word, read cell) tokens
constexpr float kUnit = 16;

struct Layout {
  Field ballast, we, waddr, value, raddr, out;
};

Layout layout() {
  FieldAllocator a(kHidden);
  Layout l;
  l.ballast = a.take("ballast", 4).value();
  l.we = a.take("we", 1).value();
  l.waddr = a.take("waddr", kAddrBits).value();
  l.value = a.take("value", kWordBits).value();
  l.raddr = a.take("raddr", kAddrBits).value();
  l.out = a.take("out", kWordBits).value();
  return l;
}

struct Token {
  bool write = false;
  int wcell = 0, rcell = 0;
  uint32_t word = 0;
};

// Token t's fields: a third write, cells and words at random (0, ~0 and one-bit words among them).
Token tokenOf(int64_t t) {
  std::mt19937 rng(static_cast<uint32_t>(t) * 2654435761u + 17u);
  Token k;
  k.write = t % 3 != 2;
  k.wcell = static_cast<int>(rng() % 128);
  k.rcell = t % 5 == 0 ? k.wcell : static_cast<int>(rng() % 128);
  k.word = t % 7 == 0 ? 0u : t % 7 == 1 ? ~0u : t % 7 == 2 ? 1u << (rng() % 32) : rng();
  return k;
}

struct Built {
  std::string dir;
  MemoryMargins margins;
};

// The memory on the layout: λ = 1 (the full layout), λG = 128, the readout every leg memory uses.
MemorySpec memorySpec(ReadHeight read, int banks) {
  const Layout l = layout();
  MemorySpec m;
  m.ballast = l.ballast;
  m.writeEnable = l.we;
  m.writeAddr = l.waddr;
  m.value = l.value;
  m.readAddr = l.raddr;
  m.out = l.out;
  m.lambda = 1;
  m.gain = 128;
  m.outUnit = kUnit;
  m.noWrite = NoWrite::ZeroKey;
  m.readout = MemoryReadout::PadInverted;
  m.read = read;
  m.banks = banks;
  return m;
}

Built build(ReadHeight read, int keyHeadDim) {
  const Layout l = layout();
  model::Qwen35Config c = config(kHidden, 1, 8, kVocab);
  c.linearKeyHeadDim = keyHeadDim;
  const int banks = 128 / keyHeadDim;  // dk 64: two heads of 64 cells
  c.linearNumKeyHeads = banks;
  c.linearNumValueHeads = banks;
  CircuitWeights w(c);
  const MemorySpec m = memorySpec(read, banks);
  Built b;
  auto mm = buildMemory(w, m);
  EXPECT_TRUE(mm.ok()) << mm.error().message;
  if (mm.ok()) b.margins = mm.value();
  for (int64_t t = 0; t < kVocab; ++t) {
    const Token k = tokenOf(t);
    fillRow(w, t, kUnit);  // the full layout: every dim ±u, the out field a +u pad
    setSigns(w, t, l.we, k.write ? 1 : 0, kUnit);
    setSigns(w, t, l.waddr, static_cast<uint64_t>(k.wcell), kUnit);
    setSigns(w, t, l.value, k.word, kUnit);
    setSigns(w, t, l.raddr, static_cast<uint64_t>(k.rcell), kUnit);
  }
  for (int d = 0; d < kHidden; ++d) EXPECT_TRUE(w.set("lm_head.weight", d, d, 1.0f).ok());
  const char* mode = read == ReadHeight::NormRail ? "rail" : "nominal";
  b.dir = write(w, "norm_rail_" + std::string(mode) + "_dk" + std::to_string(keyHeadDim));
  return b;
}

std::vector<int64_t> sequence(int n) {
  std::mt19937 rng(2048);
  std::vector<int64_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int64_t>(rng() % kVocab));
  return t;
}

struct Result {
  LayoutCheck layout;
  int64_t wrongWords = 0;
  std::string firstWrong;
};

// PadInverted: a set bit reads −u, a clear bit or a never-written cell +u (the final norm maps u
// to 1 in the full layout).
Result check(const std::vector<int64_t>& tokens, const std::vector<std::vector<float>>& rows) {
  const Layout l = layout();
  Result r;
  r.layout = checkLayout(rows, 1.0f);
  std::array<int64_t, 128> mem;
  mem.fill(-1);
  for (size_t p = 0; p < rows.size(); ++p) {
    const Token k = tokenOf(tokens[p]);
    if (k.write) mem[static_cast<size_t>(k.wcell)] = k.word;
    const int64_t want = mem[static_cast<size_t>(k.rcell)];
    uint32_t got = 0;
    for (int j = 0; j < kWordBits; ++j)
      if (rows[p][static_cast<size_t>(l.out.at(j))] < 0) got |= 1u << j;
    if (got != static_cast<uint32_t>(want < 0 ? 0 : want)) {
      if (r.wrongWords++ == 0)
        r.firstWrong = "position " + std::to_string(p) + " cell " + std::to_string(k.rcell) +
                       ": read " + std::to_string(got) + ", want " + std::to_string(want);
    }
  }
  return r;
}

struct PathRun {
  std::string where;
  Result result;
  std::vector<std::vector<float>> rows;
};

std::vector<PathRun> runAll(ReadHeight read, int keyHeadDim, bool allPaths) {
  const Built b = build(read, keyHeadDim);
  const std::vector<int64_t> tokens = sequence(inputs(200, 450));
  std::vector<PathRun> out;
  for (ComputeDtype dtype : kDtypes) {
    auto dec = load(b.dir, dtype);
    EXPECT_NE(dec, nullptr);
    if (!dec) continue;
    for (Path path : kPaths) {
      if (!allPaths && path != Path::Prefill) continue;
      PathRun pr;
      pr.where = std::string(read == ReadHeight::NormRail ? "rail" : "nominal") + " dk" +
                 std::to_string(keyHeadDim) + " " + computeDtypeName(dtype) + " " + pathName(path);
      pr.rows = run(*dec, tokens, path, kHidden);
      pr.result = check(tokens, pr.rows);
      std::cout << "[norm rail] " << pr.where << ": " << tokens.size() << " reads, "
                << pr.result.wrongWords << " wrong words; every dim: " << pr.result.layout.summary()
                << "\n";
      out.push_back(std::move(pr));
    }
  }
  return out;
}

// ---- The plan. ----

TEST(NormRail, AtAPowerOfFourKeyHeadDimThereIsNoRail) {
  auto plan = planNormRail(64, 128, 256, 32, 1e-6);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan.value().value, 0.0f);
}

TEST(NormRail, AtDk128TheRailAndTheGateAreBf16AndAHotChannelLandsOnAPowerOfTwo) {
  auto plan = planNormRail(128, 128, 256, 32, 1e-6);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const NormRail& r = plan.value();
  std::cout << "[norm rail] dk 128, h 256, 32 hot: C " << r.value << ", zs " << r.gate
            << ", hot output " << r.hot << "\n";
  EXPECT_EQ(model::bf16ToFloat(model::floatToBf16(r.value)), r.value);
  EXPECT_GE(r.gate, 17.0f);  // silu(zs) = zs; an fp32 number (its bf16 pieces on the ballast)
  int e = 0;
  EXPECT_EQ(std::frexp(r.hot, &e), 0.5f);
  // The rail dominates: 32 hot fl(o²) stay below a quarter ulp of fl((C·s)²).
  const float s = static_cast<float>(std::pow(128.0, -0.5)), o = 256.0f * s, oc = r.value * s;
  const float T = oc * oc;
  EXPECT_LT(32.0 * (o * o), (std::nextafter(T, 2 * T) - T) / 4.0);
}

TEST(NormRail, ValueHeadDimsThatAreNoPowerOfTwoAreRefused) {
  auto plan = planNormRail(128, 96, 256, 32, 1e-6);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().kind, ErrorKind::Usage);
}

TEST(NormRail, AMemoryWithNoRoomForTheRailChannelIsRefused) {
  model::Qwen35Config c = config(kHidden, 1, 8, 16);
  c.linearValueHeadDim = 64;  // 2V = 64 rails fill the head
  CircuitWeights w(c);
  auto r = buildMemory(w, memorySpec(ReadHeight::NormRail, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("norm rail"), std::string::npos) << r.error().message;
}

// ---- Through model::Decoder. ----

TEST(NormRail, EveryReadOfA128CellMemoryIsExactAtDk128OnEveryPath) {
  auto runs = runAll(ReadHeight::NormRail, 128, true);
  ASSERT_EQ(runs.size(), 6u);
  for (const PathRun& pr : runs) {
    EXPECT_EQ(pr.result.wrongWords, 0) << pr.where << ": " << pr.result.firstWrong;
    EXPECT_TRUE(pr.result.layout.ok()) << pr.where << ": " << pr.result.layout.summary();
  }
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(runs[3 * d].rows, runs[3 * d + 1].rows) << runs[3 * d].where << " vs decode";
    EXPECT_EQ(runs[3 * d].rows, runs[3 * d + 2].rows) << runs[3 * d].where << " vs mixed";
  }
}

// At dk 64 NormRail builds the one-row read unchanged: exact as before.
TEST(NormRail, AtDk64TheReadIsTheOneRowReadAndExact) {
  auto runs = runAll(ReadHeight::NormRail, 64, false);
  ASSERT_EQ(runs.size(), 2u);
  for (const PathRun& pr : runs) {
    EXPECT_EQ(pr.result.wrongWords, 0) << pr.where << ": " << pr.result.firstWrong;
    EXPECT_TRUE(pr.result.layout.ok()) << pr.where << ": " << pr.result.layout.summary();
  }
}

TEST(NormRail, FailingTwinTheNominalOneRowReadOf32BitWordsAtDk128IsUlpsOffInFp32) {
  auto runs = runAll(ReadHeight::Nominal, 128, false);
  ASSERT_EQ(runs.size(), 2u);
  for (const PathRun& pr : runs) EXPECT_EQ(pr.result.wrongWords, 0) << pr.where;
  EXPECT_GT(runs[0].result.layout.offNominal, 0) << runs[0].where;  // fp32
  EXPECT_GT(runs[0].result.layout.magnitudes.size(), 1u) << runs[0].where;
}

}  // namespace
}  // namespace qgpu::circuit
