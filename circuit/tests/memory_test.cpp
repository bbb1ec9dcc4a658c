// qgpu/circuit/tests/memory_test.cpp — the memory gadget (circuit/memory.h) run through model/'s
// real decoder: one standard linear_attention layer in a tiny checkpoint, loaded by
// model::Decoder unchanged, in fp32 and bf16, through the chunked prefill (the whole sequence as
// one prompt, several 64-token chunks) and the recurrent decode path (one token per forward).
//
// What it pins down: every read of every cell returns exactly the last value written there
// (expected values come from a plain array, not from the gadget), a never-written cell reads
// exactly 0, and every read bit lands at one magnitude. The failing twins (beta = 1/2, decay on)
// run the same check and must find wrong reads, so the check can fail.
//
// Readout: the checkpoint's untied lm_head copies the gadget's `out` dims into logits 0..V-1
// (identity rows, a probe), so logit j is out_j times the final RMSNorm's positive scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "circuit/memory.h"
#include "circuit/tests/harness.h"
#include "circuit/weights.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::kPaths;
using harness::load;
using harness::Path;
using harness::pathName;

constexpr int kHidden = 128;
constexpr int kValueBits = 8;
constexpr int kValues = 1 << kValueBits;
constexpr float kUnit = 16;  // every embedding dim is 0 or ±16
constexpr double kLambda = 2.0;

// The memory's address width and how a non-writing token leaves it alone; the token ids follow.
// W(cell, value) writes `value` into `cell` and reads `cell`; R(cell) only reads; X(cell) clears
// the memory (where the gadget is built with its reset field) and reads `cell`.
// `valueStride` > 1 keeps the vocabulary small for wide memories: only multiples of the stride
// (plus 255) are written, each 8-bit value still written as 8 bits.
struct Geometry {
  int addrBits = 4;
  NoWrite noWrite = NoWrite::ScratchRow;
  int valueStride = 1;
  int banks = 1;  // value heads (one key head each)

  int cells() const { return 1 << addrBits; }
  // Multiples of the stride up to 255, then 255 itself (stride 1: every value once).
  int choices() const { return valueStride == 1 ? kValues : (kValues - 1) / valueStride + 2; }
  int valueOf(int choice) const {
    return choice == choices() - 1 ? kValues - 1 : choice * valueStride;
  }
  int randomValue(std::mt19937& rng) const { return valueOf(static_cast<int>(rng() % choices())); }
  int64_t writeToken(int cell, int value) const {
    const int choice = value == kValues - 1 ? choices() - 1 : value / valueStride;
    return int64_t{cell} * choices() + choice;
  }
  int64_t readToken(int cell) const { return int64_t{cells()} * choices() + cell; }
  int64_t resetToken(int cell) const { return int64_t{cells()} * choices() + cells() + cell; }
  int64_t vocab() const { return int64_t{cells()} * choices() + 2 * cells(); }
  // Nonzero embedding dims: ballast + write-enable + write address + value + read address +
  // reset. A quarter of the hidden size at ±16 gives mean(x²) = 64, so the pre-norm maps ±16 to
  // exactly ±2.
  int ballastDims() const { return kHidden / 4 - (1 + addrBits + kValueBits + addrBits + 1); }
};
const Geometry kSmall{};                           // 16 cells and a scratch row
const Geometry kFull{7, NoWrite::ZeroKey, 17};     // 128 cells: every row of the head
const Geometry kBanked{9, NoWrite::ZeroKey, 33, 4}; // 512 cells over 4 heads (the ROM's size)
constexpr int kCells = 16;                         // kSmall's cells (the hand-made programs)

struct Op {
  bool write = false;
  int cell = 0;
  int value = 0;
  bool reset = false;  // clears every cell before the read (never together with write)
  int64_t token(const Geometry& g) const {
    return write ? g.writeToken(cell, value) : reset ? g.resetToken(cell) : g.readToken(cell);
  }
};

// After the layer a read of a written cell adds V dims at ±16: mean(x²) = (32 + V)·256/128, so
// the probe shows ±16/√(that) for every bit. The decision threshold is 0; a bit closer to 0 than
// half the nominal size counts as wrong.
const double kNominal = kUnit / std::sqrt((kHidden / 4 + kValueBits) * kUnit * kUnit / kHidden);

model::Qwen35Config gadgetConfig(const Geometry& g) {
  model::Qwen35Config c = harness::config(kHidden, 1, 8, g.vocab());  // the MLP adds 0
  c.linearNumKeyHeads = g.banks;
  c.linearNumValueHeads = g.banks;
  c.maxPositionEmbeddings = 4096;
  return c;
}

struct Built {
  std::string dir;
  MemoryMargins margins;
};

// The gadget's checkpoint: embedding rows for every token, the memory head, the probe.
// `resettable` connects the reset field to the gadget; without it X tokens only read.
Built buildCheckpoint(const std::string& name, WriteStrength write, Decay decay,
                      bool resettable = false, const Geometry& g = kSmall) {
  CircuitWeights w(gadgetConfig(g));
  FieldAllocator alloc(kHidden);
  MemorySpec s;
  s.ballast = alloc.take("ballast", g.ballastDims()).value();
  s.writeEnable = alloc.take("we", 1).value();
  s.writeAddr = alloc.take("waddr", g.addrBits).value();
  s.value = alloc.take("value", kValueBits).value();
  s.readAddr = alloc.take("raddr", g.addrBits).value();
  s.out = alloc.take("out", kValueBits).value();
  const Field reset = alloc.take("reset", 1).value();
  if (resettable) s.reset = reset;
  s.lambda = kLambda;
  s.write = write;
  s.decay = decay;
  s.noWrite = g.noWrite;
  s.banks = g.banks;
  auto margins = buildMemory(w, s);
  EXPECT_TRUE(margins.ok()) << margins.error().message;

  const std::string embed = w.globalTensor("embed_tokens.weight");
  auto bits = [&](int64_t row, const Field& f, int v) {
    for (int i = 0; i < f.dims; ++i)
      ASSERT_TRUE(w.set(embed, row, f.at(i), (v >> i) & 1 ? kUnit : -kUnit).ok());
  };
  for (int64_t t = 0; t < g.vocab(); ++t) {
    const bool isWrite = t < g.readToken(0);
    const int wcell = isWrite ? static_cast<int>(t / g.choices()) : 0;
    const int value = isWrite ? g.valueOf(static_cast<int>(t % g.choices())) : 0;
    const bool isReset = t >= g.resetToken(0);
    const int rcell =
        isWrite ? wcell : static_cast<int>(isReset ? t - g.resetToken(0) : t - g.readToken(0));
    EXPECT_TRUE(w.set(embed, t, reset.at(0), isReset ? kUnit : -kUnit).ok());
    for (int i = 0; i < g.ballastDims(); ++i)
      EXPECT_TRUE(w.set(embed, t, s.ballast.at(i), kUnit).ok());
    EXPECT_TRUE(w.set(embed, t, s.writeEnable.at(0), isWrite ? kUnit : -kUnit).ok());
    bits(t, s.writeAddr, wcell);
    bits(t, s.value, value);
    bits(t, s.readAddr, rcell);
  }
  for (int j = 0; j < kValueBits; ++j)
    EXPECT_TRUE(w.set("lm_head.weight", j, s.out.at(j), 1.0f).ok());
  auto exact = w.checkBf16Exact();
  EXPECT_TRUE(exact.ok()) << exact.error().message;
  Built b{harness::tempDir("memory_" + name), margins.ok() ? margins.value() : MemoryMargins{}};
  auto written = w.write(b.dir);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return b;
}

// Empty reads, then every cell filled (0 and 255 among the values), then random writes and reads.
std::vector<Op> program(uint32_t seed, int randomOps, const Geometry& g = kSmall) {
  std::mt19937 rng(seed);
  const int cells = g.cells();
  std::vector<Op> ops = {{false, 0, 0}, {false, 5, 0}, {false, cells - 1, 0}};
  for (int c = 0; c < cells; ++c) {
    const int v = c == 0 ? 0 : c == 1 ? kValues - 1 : g.randomValue(rng);
    ops.push_back({true, c, v});
  }
  for (int i = 0; i < randomOps; ++i) {
    const bool write = rng() % 2 == 0;
    ops.push_back(
        {write, static_cast<int>(rng() % cells), write ? g.randomValue(rng) : 0});
  }
  return ops;
}

struct Stats {
  int reads = 0;
  int wrong = 0;         // reads that are wrongValue or weak
  int wrongValue = 0;    // the signs decode to another value (or an empty cell is not exactly 0)
  int weak = 0;          // some bit is closer to the threshold 0 than half the nominal size
  double minBit = 1e30;  // smallest |logit| of a bit of a written cell
  double maxBit = 0;
  std::set<float> magnitudes;  // distinct |logit| over all bits of written cells
  std::string firstWrong;
};

Stats check(const std::vector<Op>& ops, const std::vector<std::vector<float>>& rows) {
  Stats st;
  std::vector<int> mem(1024, -1);  // never written (room for every cell of every geometry)
  for (size_t p = 0; p < ops.size(); ++p) {
    const Op& op = ops[p];
    if (op.reset) std::fill(mem.begin(), mem.end(), -1);
    if (op.write) mem[static_cast<size_t>(op.cell)] = op.value;
    const int expected = mem[static_cast<size_t>(op.cell)];
    ++st.reads;
    bool ok = true, strong = true;
    int got = 0;
    for (int j = 0; j < kValueBits; ++j) {
      const float l = rows[p][static_cast<size_t>(j)];
      if (expected < 0) {
        ok = ok && l == 0.0f;
        continue;
      }
      const double mag = std::fabs(l);
      st.minBit = std::min(st.minBit, mag);
      st.maxBit = std::max(st.maxBit, mag);
      st.magnitudes.insert(static_cast<float>(mag));
      if (mag < kNominal / 2) strong = false;
      if (l > 0) got |= 1 << j;
    }
    if (expected >= 0 && got != expected) ok = false;
    st.wrongValue += ok ? 0 : 1;
    st.weak += strong ? 0 : 1;
    if (!ok || !strong) {
      if (st.wrong == 0) {
        st.firstWrong = "position " + std::to_string(p) + " cell " + std::to_string(op.cell) +
                        ": expected " + std::to_string(expected) + ", read " + std::to_string(got) +
                        ", bit logits";
        for (int j = 0; j < kValueBits; ++j)
          st.firstWrong += " " + std::to_string(rows[p][static_cast<size_t>(j)]);
      }
      ++st.wrong;
    }
  }
  return st;
}

// The program through model::Decoder on one of harness.h's paths (prefill: the whole program as
// one prompt, several chunks; decode: one token per forward; mixed, what the model leg does: a
// prompt of min(100, n/2) tokens crossing a chunk boundary, a 40-token continuation through the
// chunked rule from the cached state, then one token per forward); the out field's logits.
std::vector<std::vector<float>> run(model::Decoder& dec, const std::vector<Op>& ops, Path path,
                                    const Geometry& g = kSmall) {
  std::vector<int64_t> tokens;
  for (const Op& op : ops) tokens.push_back(op.token(g));
  return harness::run(dec, tokens, path, kValueBits);
}

// Per commit the twins and the wide geometries' bf16 runs take one dtype or path less (bf16's
// one-token forwards are the slow part); QGPU_CIRCUIT_FULL=1 runs them all.
std::vector<ComputeDtype> twinDtypes() {
  if (harness::fullInputs()) return {ComputeDtype::F32, ComputeDtype::BF16};
  return {ComputeDtype::F32};
}

TEST(MemoryGadget, EveryReadOfEveryCellIsExactInFp32AndBf16OnBothPaths) {
  Built b = buildCheckpoint("exact", WriteStrength::Full, Decay::Off);
  EXPECT_EQ(b.margins.keyOn, 128.0);
  EXPECT_EQ(b.margins.keyOffMax, -128.0);
  // 319 tokens (5 chunks of 64) under QGPU_CIRCUIT_FULL, 169 (3 chunks) per commit.
  const std::vector<Op> ops = program(7, harness::inputs(150, 300));
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> byPath[3];
    for (Path path : kPaths) {
      auto rows = run(*dec, ops, path);
      ASSERT_EQ(rows.size(), ops.size());
      Stats st = check(ops, rows);
      EXPECT_EQ(st.wrong, 0) << computeDtypeName(dtype) << " " << pathName(path) << ": "
                             << st.firstWrong;
      // Constant-norm dual rail: every bit of every read lands at one magnitude.
      EXPECT_EQ(st.magnitudes.size(), 1u) << computeDtypeName(dtype) << " " << pathName(path);
      EXPECT_NEAR(st.minBit, kNominal, kNominal * 1e-2);
      std::cout << "[memory gadget] " << computeDtypeName(dtype) << " " << pathName(path) << ": "
                << st.reads << " reads, " << st.wrong << " wrong, bit magnitudes "
                << st.magnitudes.size() << " distinct, smallest " << st.minBit << " (nominal "
                << kNominal << ", threshold 0, margin " << st.minBit / kNominal << " x nominal)\n";
      byPath[static_cast<int>(path)] = std::move(rows);
    }
    // One-hot keys and power-of-two rows make the chunked solve add and subtract exact values:
    // all paths agree bit for bit.
    EXPECT_EQ(byPath[0], byPath[1]) << computeDtypeName(dtype);
    EXPECT_EQ(byPath[0], byPath[2]) << computeDtypeName(dtype);
  }
}

// Every cell of a wide geometry filled, then random writes and reads; 0 wrong, one magnitude,
// all paths alike. Half of the random tokens only read, so a zero key that wrote anything, or a
// bank that answered a query meant for another, would corrupt a cell.
void expectExactWide(const std::string& name, const Geometry& g, int randomOps) {
  Built b = buildCheckpoint(name, WriteStrength::Full, Decay::Off, false, g);
  EXPECT_EQ(b.margins.scratchRow, -1);
  const std::vector<Op> ops = program(5, randomOps, g);
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> byPath[3];
    const bool allPaths = dtype == ComputeDtype::F32 || harness::fullInputs();
    for (Path path : kPaths) {
      if (!allPaths && path != Path::Prefill) continue;
      auto rows = run(*dec, ops, path, g);
      ASSERT_EQ(rows.size(), ops.size());
      Stats st = check(ops, rows);
      EXPECT_EQ(st.wrong, 0) << name << " " << computeDtypeName(dtype) << " " << pathName(path)
                             << ": " << st.firstWrong;
      EXPECT_EQ(st.magnitudes.size(), 1u) << computeDtypeName(dtype) << " " << pathName(path);
      std::cout << "[memory " << name << "] " << computeDtypeName(dtype) << " " << pathName(path)
                << ": " << st.reads << " reads of " << g.cells() << " cells in " << g.banks
                << " head(s), " << st.wrong << " wrong, " << st.magnitudes.size()
                << " magnitude(s), smallest bit " << st.minBit << "\n";
      byPath[static_cast<int>(path)] = std::move(rows);
    }
    if (!allPaths) continue;
    EXPECT_EQ(byPath[0], byPath[1]) << computeDtypeName(dtype);
    EXPECT_EQ(byPath[0], byPath[2]) << computeDtypeName(dtype);
  }
}

// All 128 rows of the head hold cells: a non-writing token's key is exactly 0 (NoWrite::ZeroKey),
// so it changes no row (431 tokens, 7 chunks).
TEST(MemoryGadget, FullHeadWithZeroKeyNoWriteIsExactInFp32AndBf16OnBothPaths) {
  expectExactWide("full head", kFull, harness::inputs(150, 300));
}

// 512 cells over 4 heads: the top two address bits pick the head; the other heads' keys and
// queries are exactly 0 and their reads add exact zeros to the out field (615 tokens).
TEST(MemoryGadget, FourBanksOf128CellsAreExactInFp32AndBf16OnBothPaths) {
  expectExactWide("4 banks", kBanked, 100);
}

TEST(MemoryGadget, BanksNeedZeroKeyAndAPowerOfTwo) {
  Geometry g = kBanked;
  CircuitWeights w(gadgetConfig(g));
  FieldAllocator alloc(kHidden);
  MemorySpec s;
  s.ballast = alloc.take("ballast", g.ballastDims()).value();
  s.writeEnable = alloc.take("we", 1).value();
  s.writeAddr = alloc.take("waddr", g.addrBits).value();
  s.value = alloc.take("value", kValueBits).value();
  s.readAddr = alloc.take("raddr", g.addrBits).value();
  s.out = alloc.take("out", kValueBits).value();
  s.banks = 4;
  auto scratch = buildMemory(w, s);  // ScratchRow with banks
  ASSERT_FALSE(scratch.ok());
  EXPECT_NE(scratch.error().message.find("ZeroKey"), std::string::npos);
  s.noWrite = NoWrite::ZeroKey;
  s.banks = 3;
  EXPECT_FALSE(buildMemory(w, s).ok());
  s.banks = 8;  // 8 heads do not exist in a 4-head layer
  EXPECT_FALSE(buildMemory(w, s).ok());
  s.banks = 2;  // 2^(9 - 1) = 256 rows per head > 128
  EXPECT_FALSE(buildMemory(w, s).ok());
  s.banks = 4;
  EXPECT_TRUE(buildMemory(w, s).ok());
}

// The twin: ZeroKey relies on every off key channel being exactly 0 after SiLU. Pushing one
// channel's off level up to −0.05·λG (−6.4: SiLU leaks −0.011, which the L2 norm renormalises to
// a full-strength key, P§3.1 D1) makes every non-writing token whose write address is 0 (the
// read-only tokens) overwrite cell 0. fp32 only: the leak constant is not bf16-exact on purpose.
TEST(MemoryGadget, FailingTwinZeroKeyWithALeakyChannelCorruptsACell) {
  CircuitWeights w(gadgetConfig(kSmall));
  FieldAllocator alloc(kHidden);
  MemorySpec s;
  s.ballast = alloc.take("ballast", kSmall.ballastDims()).value();
  s.writeEnable = alloc.take("we", 1).value();
  s.writeAddr = alloc.take("waddr", kSmall.addrBits).value();
  s.value = alloc.take("value", kValueBits).value();
  s.readAddr = alloc.take("raddr", kSmall.addrBits).value();
  s.out = alloc.take("out", kValueBits).value();
  s.lambda = kLambda;
  s.noWrite = NoWrite::ZeroKey;
  ASSERT_TRUE(buildMemory(w, s).ok());
  // Key channel 0 is row linearKeyDim() of in_proj_qkv (one key head): its constant −A·G becomes
  // (−A + 0.95)·G, so N = −0.05 for a non-writing token addressed at 0.
  const std::string qkv = w.layerTensor(0, "linear_attn.in_proj_qkv.weight");
  const int64_t key0 = w.config().linearKeyDim();
  ASSERT_TRUE(w.set(qkv, key0, s.ballast.at(0), (-kSmall.addrBits + 0.95f) * s.gain).ok());
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int64_t t = 0; t < kSmall.vocab(); ++t) {
    const bool isWrite = t < kSmall.readToken(0);
    const int wcell = isWrite ? static_cast<int>(t / kValues) : 0;
    const int rcell = isWrite ? wcell : static_cast<int>(t - kSmall.readToken(0)) % kCells;
    for (int i = 0; i < s.ballast.dims; ++i) ASSERT_TRUE(w.set(embed, t, s.ballast.at(i), kUnit).ok());
    ASSERT_TRUE(w.set(embed, t, s.writeEnable.at(0), isWrite ? kUnit : -kUnit).ok());
    for (int i = 0; i < kSmall.addrBits; ++i) {
      ASSERT_TRUE(w.set(embed, t, s.writeAddr.at(i), (wcell >> i) & 1 ? kUnit : -kUnit).ok());
      ASSERT_TRUE(w.set(embed, t, s.readAddr.at(i), (rcell >> i) & 1 ? kUnit : -kUnit).ok());
    }
    for (int i = 0; i < kValueBits; ++i)
      ASSERT_TRUE(w.set(embed, t, s.value.at(i), ((isWrite ? t % kValues : 0) >> i) & 1 ? kUnit : -kUnit).ok());
  }
  for (int j = 0; j < kValueBits; ++j) ASSERT_TRUE(w.set("lm_head.weight", j, s.out.at(j), 1.0f).ok());
  const std::string dir = harness::tempDir("memory_leaky_zero_key");
  ASSERT_TRUE(w.write(dir).ok());
  auto dec = load(dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  const std::vector<Op> ops = program(7, harness::inputs(150, 300));
  for (Path path : kPaths) {
    Stats st = check(ops, run(*dec, ops, path));
    EXPECT_GT(st.wrongValue, 0) << pathName(path);
    std::cout << "[memory twin leaky zero key] f32 " << pathName(path) << ": " << st.wrongValue
              << " of " << st.reads << " reads wrong; first: " << st.firstWrong << "\n";
  }
}

// Failing twins: the same program and check on a gadget with one rule broken must find wrong reads.
void expectCorrupt(const std::string& name, WriteStrength write, Decay decay) {
  Built b = buildCheckpoint(name, write, decay);
  const std::vector<Op> ops = program(7, harness::inputs(150, 300));
  for (ComputeDtype dtype : twinDtypes()) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : kPaths) {
      Stats st = check(ops, run(*dec, ops, path));
      EXPECT_GT(st.wrong, 0) << name << " " << computeDtypeName(dtype) << " " << pathName(path);
      std::cout << "[memory twin " << name << "] " << computeDtypeName(dtype) << " "
                << pathName(path) << ": " << st.wrong << " of " << st.reads << " reads wrong ("
                << st.wrongValue << " wrong values, " << st.weak
                << " with a bit below half size); first: " << st.firstWrong << "\n";
    }
  }
}

TEST(MemoryGadget, FailingTwinBetaHalfCorruptsReads) {
  expectCorrupt("beta_half", WriteStrength::Half, Decay::Off);
}

TEST(MemoryGadget, FailingTwinDecayOnCorruptsReads) {
  expectCorrupt("decay_half", WriteStrength::Full, Decay::Half);
}

// Decay scales a row uniformly, so the signs survive until the row underflows: 200 tokens at
// 1/2 per token take 256 below the smallest float, and the read returns the wrong value 0. The
// exact gadget reads the same program back; that is the twin.
TEST(MemoryGadget, DecayOnLosesAValueAfterALongGap) {
  std::vector<Op> ops = {{true, 3, 0xa5}};
  for (int i = 0; i < 200; ++i) ops.push_back({false, i % 2 == 0 ? 7 : 9, 0});
  ops.push_back({false, 3, 0});
  for (Decay decay : {Decay::Off, Decay::Half}) {
    Built b = buildCheckpoint(decay == Decay::Off ? "gap_exact" : "gap_decay", WriteStrength::Full,
                              decay);
    for (ComputeDtype dtype : twinDtypes()) {
      auto dec = load(b.dir, dtype);
      ASSERT_NE(dec, nullptr);
      for (Path path : kPaths) {
        Stats st = check(ops, run(*dec, ops, path));
        if (decay == Decay::Off)
          EXPECT_EQ(st.wrong, 0) << computeDtypeName(dtype) << " " << pathName(path) << ": "
                                 << st.firstWrong;
        else
          EXPECT_GT(st.wrongValue, 0) << computeDtypeName(dtype) << " " << pathName(path);
      }
    }
  }
}

// Decay as an exact reset (docs/circuit.md §2.1): one X token clears all 16 cells, on every path,
// including two resets inside one 64-token chunk, one at a chunk's first position and one inside
// the mixed path's cached 40-token continuation (position 119 of [80, 120)). The twin:
// the same program on the gadget without the reset connection reads stale values.
std::vector<Op> resetProgram() {
  std::mt19937 rng(11);
  std::vector<Op> ops;
  auto fill = [&] {
    for (int c = 0; c < kCells; ++c) ops.push_back({true, c, static_cast<int>(rng() % kValues)});
  };
  fill();                              // positions 0..15
  ops.push_back({false, 3, 0, true});  // 16: reset, cell 3 now reads 0 (empty)
  for (int c = 0; c < kCells; ++c) ops.push_back({false, c, 0});  // every cell empty
  fill();                                                         // ..48
  while (ops.size() < 64) ops.push_back({false, static_cast<int>(rng() % kCells), 0});
  ops.push_back({false, 9, 0, true});  // 64: first position of the second chunk
  ops.push_back({true, 2, 77});
  ops.push_back({false, 2, 0, true});  // a reset right after a write: 2 reads empty
  for (int c = 0; c < kCells; ++c) ops.push_back({false, c, 0});
  fill();
  for (int i = 0; i < 60; ++i) {
    if (i == 20) ops.push_back({false, 4, 0, true});  // 119: inside the mixed path's continuation
    const bool write = rng() % 2 == 0;
    ops.push_back(
        {write, static_cast<int>(rng() % kCells), write ? static_cast<int>(rng() % kValues) : 0});
  }
  return ops;
}

TEST(MemoryGadget, ResetTokenClearsEveryCellExactlyOnEveryPath) {
  Built b = buildCheckpoint("reset", WriteStrength::Full, Decay::Off, /*resettable=*/true);
  const std::vector<Op> ops = resetProgram();
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> byPath[3];
    for (Path path : kPaths) {
      auto rows = run(*dec, ops, path);
      Stats st = check(ops, rows);
      EXPECT_EQ(st.wrong, 0) << computeDtypeName(dtype) << " " << pathName(path) << ": "
                             << st.firstWrong;
      EXPECT_EQ(st.magnitudes.size(), 1u) << computeDtypeName(dtype) << " " << pathName(path);
      std::cout << "[memory reset] " << computeDtypeName(dtype) << " " << pathName(path) << ": "
                << st.reads << " reads, " << st.wrong << " wrong, " << st.magnitudes.size()
                << " magnitude(s)\n";
      byPath[static_cast<int>(path)] = std::move(rows);
    }
    EXPECT_EQ(byPath[0], byPath[1]) << computeDtypeName(dtype);
    EXPECT_EQ(byPath[0], byPath[2]) << computeDtypeName(dtype);
  }
}

TEST(MemoryGadget, FailingTwinWithoutResetReadsStaleValues) {
  Built b = buildCheckpoint("noreset", WriteStrength::Full, Decay::Off, /*resettable=*/false);
  const std::vector<Op> ops = resetProgram();
  auto dec = load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : kPaths) EXPECT_GT(check(ops, run(*dec, ops, path)).wrongValue, 0);
}

}  // namespace
}  // namespace qgpu::circuit
