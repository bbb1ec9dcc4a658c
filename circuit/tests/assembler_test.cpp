// qgpu/circuit/tests/assembler_test.cpp — the tap heads and the value assembler (circuit/tap.h,
// circuit/assembler.h) run through model/'s real decoder (circuit/tests/harness.h): two standard
// linear_attention layers over the trace vocabulary's embedding (circuit/tokens.h), fp32 and
// bf16, the whole sequence as one prompt (chunked prefill, several 64-token chunks), one token per
// forward (recurrent decode), and mixed (a prompt, a 40-token cached continuation, then one at a
// time).
//
// What it pins down: at every position the six records of p−1..p−6 are the fields of those
// tokens (before the sequence start: the canonical "no token" record), and at every terminal
// chunk T the 32-bit value field is the value the test encoded there with trace::encodeValue
// (expected values from the test's own list); at every other token the value field is 0. The
// full layout: every probed dim of every position is exactly ±1 (±u after the final norm at
// λf = 1 — one distinct magnitude), after the last layer and at every layer input (checkpoints
// with the later layers silenced), so λ is exactly 1 at every layer input; and the three paths
// agree bit for bit — at key head dim 128 (the `2b` shape) and 64. The failing twins (taps that
// read 0 before the sequence start; no second level; heads and MLP that accumulate instead of
// replacing; one-row reads at key head dim 128) must fail.
//
// Readout: the untied lm_head is a probe (identity rows for every residual dim), so logit d is
// x_d times the final RMSNorm's scale; the ballast's logit is the nominal size of a ±16 field.
//
// Inputs (harness::inputs): per commit a few hundred tokens that still hold every value length
// 1..7, the edge values, values at position 0 and across chunk boundaries; QGPU_CIRCUIT_FULL=1
// the docs' measurement (10,407 tokens / 2,012 values fp32, 5,290 / 1,012 bf16).
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "circuit/assembler.h"
#include "circuit/tests/harness.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::kPaths;
using harness::Path;
using harness::pathName;
using trace::Family;
using trace::Token;

constexpr int kHidden = 256;
constexpr int64_t kVocab = std::max<int64_t>(trace::kVocabSize, kHidden);

// Three heads of key head dim 128 (the `2b` shape: the tap heads' 4-hot keys and two-row queries,
// tap.h "The read height") or 64 (one-row reads, 1/√dk = 1/8); value head dim 128.
model::Qwen35Config config(int keyHeadDim = 128) {
  model::Qwen35Config c = harness::config(kHidden, 2, 1024, kVocab);
  c.linearNumKeyHeads = 3;
  c.linearNumValueHeads = 3;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Variant {
  Padding padding = Padding::Canonical;
  bool secondLevel = true;
  bool accumulate = false;
  int keyHeadDim = 128;
  ReadHeight read = ReadHeight::Exact;
};

struct Built {
  explicit Built(const model::Qwen35Config& c) : weights(c) {}
  std::string dir;
  TokenLayout tokens;
  Assembler assembler;
  CircuitWeights weights;
};

std::unique_ptr<Built> build(const std::string& name, Variant v) {
  auto b = std::make_unique<Built>(config(v.keyHeadDim));
  FieldAllocator alloc(kHidden);
  b->tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(b->weights, b->tokens).ok());
  AssemblerSpec s;
  s.tokens = b->tokens;
  s.padding = v.padding;
  s.secondLevel = v.secondLevel;
  s.accumulateTwin = v.accumulate;
  s.read = v.read;
  auto a = buildAssembler(b->weights, alloc, s);
  EXPECT_TRUE(a.ok()) << a.error().message;
  if (a.ok()) b->assembler = a.value();
  for (int d = 0; d < kHidden; ++d) EXPECT_TRUE(b->weights.set("lm_head.weight", d, d, 1.0f).ok());
  b->dir = harness::write(b->weights, "asm_" + name);
  return b;
}

// ---- The test's own sequence: values and the positions of their T tokens. ----
struct Sequence {
  std::vector<int64_t> tokens;
  std::map<size_t, uint32_t> valueAt;  // position of a T → the value encoded there
  int acrossChunks = 0;                // values whose tokens straddle a 64-token chunk boundary
};

std::vector<Token> nonChunkTokens() {
  std::vector<Token> out;
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const Family f = trace::familyOf(static_cast<Token>(id));
    if (f != Family::C && f != Family::T) out.push_back(static_cast<Token>(id));
  }
  return out;
}

Sequence sequence(uint32_t seed, int randomValues) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> values = {0u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u,
                                  static_cast<uint32_t>(-15), static_cast<uint32_t>(-16),
                                  511u, 512u, static_cast<uint32_t>(-511), static_cast<uint32_t>(-512)};
  // Every length 1..7, both signs: random values of exactly b significant bits.
  for (int i = 0; i < randomValues; ++i) {
    const int bits = static_cast<int>(rng() % 32) + 1;
    uint32_t v = static_cast<uint32_t>(rng()) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
    if (rng() % 2) v = ~v;
    values.push_back(v);
  }
  const std::vector<Token> others = nonChunkTokens();
  Sequence s;
  // The first value starts at position 0 (its chunks see the padding), the second follows at once.
  for (size_t i = 0; i < values.size(); ++i) {
    const int gap = i < 2 ? 0 : static_cast<int>(rng() % 4);  // 0..3 non-chunk tokens between
    for (int g = 0; g < gap; ++g) s.tokens.push_back(others[rng() % others.size()]);
    const size_t first = s.tokens.size();
    for (Token t : trace::encodeValue(values[i])) s.tokens.push_back(t);
    s.valueAt[s.tokens.size() - 1] = values[i];
    s.acrossChunks += first / 64 != (s.tokens.size() - 1) / 64 ? 1 : 0;
  }
  return s;
}

// ---- The check: expectations from the trace vocabulary and the test's value list. ----
struct Stats {
  int values = 0;          // T positions checked
  int wrongValues = 0;     // a T whose value field decodes to another value
  int wrongZero = 0;       // a non-T whose value field is not 0
  int wrongRecords = 0;    // a record with a bit of the wrong sign
  int64_t inexact = 0;     // a checked bit whose |logit| is not exactly the nominal 1
  double minBit = 1e30;    // smallest |bit| / nominal over all checked bits
  double maxBit = 0;
  std::string firstWrong;
};

Stats check(const Built& b, const Sequence& s, const std::vector<std::vector<float>>& rows) {
  Stats st;
  const Assembler& a = b.assembler;
  auto note = [&](const std::string& what) {
    if (st.firstWrong.empty()) st.firstWrong = what;
  };
  for (size_t p = 0; p < rows.size(); ++p) {
    const std::vector<float>& row = rows[p];
    auto bitIs = [&](int dim, bool one, const std::string& what) {
      const double v = row[static_cast<size_t>(dim)];  // nominal 1: λf = 1 in the full layout
      const double mag = std::fabs(v);
      st.minBit = std::min(st.minBit, mag);
      st.maxBit = std::max(st.maxBit, mag);
      if (mag != 1.0) {
        ++st.inexact;
        note("position " + std::to_string(p) + " " + what + ": " + std::to_string(v) + " x nominal");
      }
      return (v > 0) == one;
    };
    // Records of p−1 .. p−6.
    for (int k = 1; k <= kWindow; ++k) {
      const TokenRecord& r = a.back[static_cast<size_t>(k - 1)];
      const bool present = p >= static_cast<size_t>(k);
      const Token tok = present ? static_cast<Token>(s.tokens[p - static_cast<size_t>(k)]) : Token{0};
      const Family f = trace::familyOf(tok);
      const bool chunk = present && (f == Family::C || f == Family::T);
      const int cv = chunk ? trace::indexOf(tok) : 0;
      bool ok = bitIs(r.present(), present, "present");
      ok = bitIs(r.isChunk(), chunk, "isChunk") && ok;
      ok = bitIs(r.isTerminal(), present && f == Family::T, "isTerminal") && ok;
      for (int j = 0; j < trace::kChunkBits; ++j)
        ok = bitIs(r.chunk(j), (cv >> j) & 1, "chunk bit") && ok;
      if (!ok) {
        ++st.wrongRecords;
        note("position " + std::to_string(p) + ": record of p-" + std::to_string(k) + " wrong");
      }
    }
    // The value field.
    uint32_t got = 0;
    for (int i = 0; i < kValueBits; ++i)
      if (bitIs(a.value.at(i), true, "value bit " + std::to_string(i))) got |= 1u << i;
    auto it = s.valueAt.find(p);
    if (it != s.valueAt.end()) {
      ++st.values;
      if (got != it->second) {
        ++st.wrongValues;
        note("position " + std::to_string(p) + ": expected " +
             std::to_string(static_cast<int32_t>(it->second)) + ", assembled " +
             std::to_string(static_cast<int32_t>(got)));
      }
    } else if (got != 0) {
      ++st.wrongZero;
      note("position " + std::to_string(p) + ": a non-terminal token assembled " +
           std::to_string(got));
    }
  }
  return st;
}

void expectExact(const Stats& st, const Sequence& s, const std::string& where) {
  EXPECT_EQ(st.values, static_cast<int>(s.valueAt.size())) << where;
  EXPECT_EQ(st.wrongValues, 0) << where << ": " << st.firstWrong;
  EXPECT_EQ(st.wrongZero, 0) << where << ": " << st.firstWrong;
  EXPECT_EQ(st.wrongRecords, 0) << where << ": " << st.firstWrong;
  EXPECT_EQ(st.inexact, 0) << where << ": " << st.firstWrong;
}

std::string describe(const Stats& st) {
  return std::to_string(st.values) + " values, " + std::to_string(st.wrongValues) + " wrong, " +
         std::to_string(st.wrongZero) + " non-T not 0, " + std::to_string(st.wrongRecords) +
         " wrong records, " + std::to_string(st.inexact) + " inexact bits; bits " +
         std::to_string(st.minBit) + " .. " + std::to_string(st.maxBit) + " x nominal";
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void expectEveryValueAndRecordExact(int keyHeadDim) {
  Variant v;
  v.keyHeadDim = keyHeadDim;
  auto b = build("exact" + std::to_string(keyHeadDim), v);
  const Assembler& a = b->assembler;
  std::cout << "[assembler] key head dim " << keyHeadDim << ": tap heads read " << a.heads[0].read.read
            << " per hot channel over " << a.heads[0].read.keyRows << " key row(s)\n";
  std::cout << "[assembler] λ design: layer0 " << a.lambda[0] << ", layer1 " << a.lambda[1]
            << ", layer1 MLP " << a.lambda[2] << "; MLP units " << a.units << ", widest AND "
            << a.maxFanIn << " literals; AND on ±" << a.andOn << "; head write per rail "
            << a.heads[0].readUnit << " (level 0) " << a.heads[3].readUnit
            << " (level 1), bf16 rounding " << a.heads[3].readUnitError << "\n";
  EXPECT_EQ(a.lambda[0], 1.0);
  EXPECT_EQ(a.lambda[2], 1.0);
  EXPECT_EQ(a.heads[3].readUnitError, 0.0);
  EXPECT_GE(a.andOn, 89.0);
  // The long sequence runs as one prompt; the one-token-per-forward paths run a shorter one with
  // the same edge values. bf16 runs a shorter long one (its CPU prefill is ~10x slower).
  const Sequence longSeq = sequence(2026, harness::inputs(150, 2000));
  const Sequence longBf16 = sequence(2026, harness::inputs(40, 1000));
  const Sequence shortSeq = sequence(2027, harness::inputs(24, 60));
  for (const Sequence* seq : {&longSeq, &longBf16, &shortSeq}) {
    std::set<int> lengths;  // every length 1..7 is present
    for (auto [pos, v] : seq->valueAt) lengths.insert(trace::valueLength(v));
    EXPECT_EQ(lengths.size(), 7u);
    EXPECT_GT(seq->acrossChunks, 0);
    std::cout << "[assembler] sequence: " << seq->tokens.size() << " tokens, "
              << seq->valueAt.size() << " values (" << seq->acrossChunks
              << " across a chunk boundary)\n";
  }
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b->dir, dtype);
    ASSERT_NE(dec, nullptr);
    const Sequence& longOne = dtype == ComputeDtype::F32 ? longSeq : longBf16;
    auto start = std::chrono::steady_clock::now();
    auto rows = harness::run(*dec, longOne.tokens, Path::Prefill, kHidden);
    ASSERT_EQ(rows.size(), longOne.tokens.size());
    const std::string where = std::string(computeDtypeName(dtype)) + " prefill (" +
                              std::to_string(longOne.tokens.size()) + " tokens)";
    Stats st = check(*b, longOne, rows);
    expectExact(st, longOne, where);
    const harness::LayoutCheck layout = harness::checkLayout(rows, 1.0f);
    EXPECT_TRUE(layout.ok()) << where << ": " << layout.summary();
    std::cout << "[assembler] " << where << ": " << describe(st) << "; every dim: "
              << layout.summary() << " (" << seconds(start) << " s)\n";
    std::vector<std::vector<float>> byPath[3];
    for (Path path : kPaths) {
      start = std::chrono::steady_clock::now();
      auto r = harness::run(*dec, shortSeq.tokens, path, kHidden);
      ASSERT_EQ(r.size(), shortSeq.tokens.size());
      const std::string w = std::string(computeDtypeName(dtype)) + " " + pathName(path) + " (" +
                            std::to_string(shortSeq.tokens.size()) + " tokens)";
      st = check(*b, shortSeq, r);
      expectExact(st, shortSeq, w);
      std::cout << "[assembler] " << w << ": " << describe(st) << " (" << seconds(start) << " s)\n";
      byPath[static_cast<int>(path)] = std::move(r);
    }
    EXPECT_EQ(byPath[0], byPath[1]) << computeDtypeName(dtype) << ": prefill != decode";
    EXPECT_EQ(byPath[0], byPath[2]) << computeDtypeName(dtype) << ": prefill != mixed";
  }
}

TEST(Assembler, EveryValueAndEveryRecordIsExactInFp32AndBf16OnEveryPath) {
  expectEveryValueAndRecordExact(128);
}

TEST(Assembler, AtKeyHeadDim64TooEveryValueAndEveryRecordIsExact) {
  expectEveryValueAndRecordExact(64);
}

// λ at every layer input, measured: the checkpoint with everything after a stage silenced reads
// that stage's residual at the probe; every dim of every position must be exactly ±1 (so
// Σx² = H·16² and λ = 1 exactly at the next input), in both dtypes.
TEST(Assembler, EveryLayerInputHoldsTheFullLayoutSoLambdaIsExactlyOne) {
 for (int dk : {128, 64}) {
  Variant v;
  v.keyHeadDim = dk;
  auto b = build("layout" + std::to_string(dk), v);
  const Sequence s = sequence(2027, harness::inputs(24, 60));
  struct Stage {
    const char* name;
    int layer;
    bool withMlp;
  };
  const Stage stages[] = {{"layer 0 input (the embedding)", -1, false},
                          {"layer 1 input (after layer 0)", 0, true},
                          {"layer 1 MLP input (after its heads)", 1, false},
                          {"final norm input (after layer 1)", 1, true}};
  for (const Stage& stage : stages) {
    CircuitWeights w = b->weights;
    harness::silenceAfter(w, stage.layer, stage.withMlp);
    const std::string dir = harness::write(w, "asm_stage");
    for (ComputeDtype dtype : harness::kDtypes) {
      auto dec = harness::load(dir, dtype);
      ASSERT_NE(dec, nullptr);
      const harness::LayoutCheck c =
          harness::checkLayout(harness::run(*dec, s.tokens, Path::Prefill, kHidden), 1.0f);
      EXPECT_TRUE(c.ok()) << stage.name << " " << computeDtypeName(dtype) << ": " << c.summary();
      EXPECT_EQ(c.magnitudes.size(), 1u) << stage.name;
      std::cout << "[assembler λ] dk " << dk << " " << stage.name << " " << computeDtypeName(dtype)
                << ": " << c.summary() << " (λ = 1 exactly iff 0 are off)\n";
    }
  }
 }
}

// Failing twins: the same sequence and check must find errors (prefill per commit; every path
// under QGPU_CIRCUIT_FULL).
std::vector<Path> twinPaths() {
  if (harness::fullInputs()) return {Path::Prefill, Path::Decode, Path::Mixed};
  return {Path::Prefill};
}

TEST(Assembler, FailingTwinTapsReadingZeroBeforeTheStartAreCaught) {
  auto b = build("zero_pad", {Padding::Zero, true, false});
  const Sequence s = sequence(2026, harness::inputs(24, 100));
  auto dec = harness::load(b->dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : twinPaths()) {
    const Stats st = check(*b, s, harness::run(*dec, s.tokens, path, kHidden));
    EXPECT_GT(st.wrongRecords, 0) << pathName(path);
    std::cout << "[assembler twin zero padding] " << pathName(path) << ": " << describe(st)
              << "; first: " << st.firstWrong << "\n";
  }
}

TEST(Assembler, FailingTwinWithoutTheSecondLevelGetsLongValuesWrong) {
  auto b = build("one_level", {Padding::Canonical, false, false});
  const Sequence s = sequence(2026, harness::inputs(24, 100));
  auto dec = harness::load(b->dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : twinPaths()) {
    const Stats st = check(*b, s, harness::run(*dec, s.tokens, path, kHidden));
    EXPECT_GT(st.wrongValues, 0) << pathName(path);
    std::cout << "[assembler twin one level] " << pathName(path) << ": " << describe(st) << "\n";
  }
}

// Heads that add ±u over the pads and an MLP that writes over the value field's pad without
// cancelling it: dims hold 0 or ±2u, Σx² changes from position to position, λ is no longer one
// number and the bits are no longer exact.
TEST(Assembler, FailingTwinAccumulatingOverThePadsIsInexact) {
  auto b = build("accumulate", {Padding::Canonical, true, true});
  const Sequence s = sequence(2026, harness::inputs(24, 100));
  auto dec = harness::load(b->dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : twinPaths()) {
    auto rows = harness::run(*dec, s.tokens, path, kHidden);
    const Stats st = check(*b, s, rows);
    const harness::LayoutCheck layout = harness::checkLayout(rows, 1.0f);
    EXPECT_GT(layout.offNominal, 0) << pathName(path);
    std::cout << "[assembler twin accumulate] " << pathName(path) << ": " << describe(st)
              << "; every dim: " << layout.summary() << "\n";
  }
}

// The failing twin of the read construction: the one-row heads of before (hot height λGv, one key
// row) at key head dim 128. The read is 128·fl(2^-3.5), no power of two, and the fp32 gated norm
// leaves the bits a head writes 1–2 ulps off ±u; every decision still holds (the clamped ANDs do
// not see an ulp), bf16 rounds it away. The same sequence is exact with ReadHeight::Exact (above).
TEST(Assembler, FailingTwinOneRowReadsAtKeyHeadDim128AreUlpsOffButEveryValueIsRight) {
  Variant v;
  v.read = ReadHeight::Nominal;
  auto b = build("dk128_nominal", v);
  const Sequence s = sequence(2027, harness::inputs(24, 60));
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b->dir, dtype);
    ASSERT_NE(dec, nullptr);
    auto rows = harness::run(*dec, s.tokens, Path::Prefill, kHidden);
    const Stats st = check(*b, s, rows);
    const harness::LayoutCheck layout = harness::checkLayout(rows, 1.0f);
    EXPECT_EQ(st.wrongValues + st.wrongZero + st.wrongRecords, 0) << st.firstWrong;
    if (dtype == ComputeDtype::F32)
      EXPECT_GT(layout.offNominal, 0);
    else
      EXPECT_EQ(layout.offNominal, 0) << layout.summary();
    std::cout << "[assembler twin dk 128 one-row] " << computeDtypeName(dtype) << " prefill: "
              << describe(st) << "; every dim: " << layout.summary() << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
