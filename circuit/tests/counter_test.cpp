// qgpu/circuit/tests/counter_test.cpp — the event counter (circuit/counter.h) through model/'s real
// decoder: layer 0 holds the counter head, layer 1 one threshold head per N and, in its MLP, the
// one-hot decode of n < 8; fp32 and bf16; chunked prefill, recurrent decode and the mixed path.
//
// Layout (hidden 128, the full layout of stack_test): every dim ±16 except three quiet dims (0;
// the first receives the counter's level ℓ(n)) and one heavy pad at +32, so Σx² = 124·256 + 1024
// = 128·256 and λ = 1 at every layer input (if the level were not tiny, it would not be).
// Tokens: 0 plain, 1 event, 2 reset.
//
// What it pins down, at every position of sequences that cross the 64-token chunk boundary many
// times (events in consecutive tokens, resets mid-chunk, events right after a reset, events before
// any reset, a climb to n = 120 past the largest threshold 105, the claimed range): every decision
// [n ≥ N] for N ∈ kThresholds and every one-hot dim is exactly ±1 at the probe (right sign, one
// magnitude), the ballast probe is exactly 1 (λ unchanged), and the level itself is exactly 2^(−14−n) (0 before
// the first reset). The expected n comes from a plain count over the token list, never from the
// gadget. Twins: beta not exactly ½, no reference refresh — each must give wrong decisions. The
// chunked-path limit (≤ 24 halvings since the last reset in one chunk) and the key head dim 128
// behaviour are pinned as findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

#include "circuit/counter.h"
#include "circuit/tests/harness.h"

namespace qgpu::circuit {
namespace {

using namespace harness;

constexpr int kHidden = 128;
constexpr float kUnit = 16;
constexpr int kLevelExp = -10;
constexpr int kDecodeK = 8;  // one-hot n = 0..7, and n ≥ 8
const std::vector<int> kThresholds = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 25, 32, 48, 64, 105};
constexpr int64_t kPlain = 0, kEvent = 1, kReset = 2;
constexpr int kNever = -1;  // the count before the first reset: "infinite"

struct Layout {
  Field ballast, event, reset, quiet, heavy, atLeast, oneHot;
};

Layout layout() {
  FieldAllocator a(kHidden);
  Layout l;
  l.ballast = a.take("ballast", 2).value();
  l.event = a.take("event", 1).value();
  l.reset = a.take("reset", 1).value();
  l.quiet = a.take("quiet", 3).value();
  l.heavy = a.take("heavy", 1).value();
  l.atLeast = a.take("atLeast", static_cast<int>(kThresholds.size())).value();
  l.oneHot = a.take("oneHot", kDecodeK + 1).value();
  return l;
}

// Probes: 0 ballast, then the decisions, the one-hot dims, the level.
int probeCount() {
  return 1 + static_cast<int>(kThresholds.size()) + kDecodeK + 1 + 1;
}
int levelProbe() {
  return probeCount() - 1;
}

std::string build(const std::string& name, EventCounterTwin twin = EventCounterTwin::None,
                  int keyHeadDim = 64, ReadHeight read = ReadHeight::Exact) {
  const Layout l = layout();
  model::Qwen35Config c = config(kHidden, 2, 32, 64);
  c.linearNumKeyHeads = c.linearNumValueHeads = static_cast<int>(kThresholds.size());
  c.linearKeyHeadDim = keyHeadDim;
  CircuitWeights w(c);
  for (int64_t t : {kPlain, kEvent, kReset}) {
    fillRow(w, t, kUnit);
    const std::string e = w.globalTensor("embed_tokens.weight");
    EXPECT_TRUE(w.set(e, t, l.event.at(0), t == kEvent ? kUnit : -kUnit).ok());
    EXPECT_TRUE(w.set(e, t, l.reset.at(0), t == kReset ? kUnit : -kUnit).ok());
    for (int i = 0; i < l.quiet.dims; ++i) EXPECT_TRUE(w.set(e, t, l.quiet.at(i), 0.0f).ok());
    EXPECT_TRUE(w.set(e, t, l.heavy.at(0), 2 * kUnit).ok());
  }
  EventCounterSpec cs;
  cs.layer = 0;
  cs.head = 0;
  cs.ballast = l.ballast;
  cs.event = l.event.at(0);
  cs.reset = l.reset.at(0);
  cs.quiet = l.quiet.at(0);
  cs.levelExp = kLevelExp;
  cs.twin = twin;
  cs.read = read;
  auto cm = buildEventCounter(w, cs);
  EXPECT_TRUE(cm.ok()) << cm.error().message;
  for (size_t i = 0; i < kThresholds.size(); ++i) {
    ThresholdSpec ts;
    ts.layer = 1;
    ts.head = static_cast<int>(i);
    ts.ballast = l.ballast;
    ts.quiet = l.quiet.at(0);
    ts.levelExp = kLevelExp;
    ts.threshold = kThresholds[i];
    ts.out = l.atLeast.at(static_cast<int>(i));
    ts.read = read;
    auto tm = buildThreshold(w, ts);
    EXPECT_TRUE(tm.ok()) << tm.error().message;
  }
  UnitWriter units(w, 1);
  CountDecodeSpec ds;
  ds.ballast = l.ballast;
  for (int j = 0; j < kDecodeK; ++j) ds.atLeast.push_back(l.atLeast.at(j));  // N = 1..8
  ds.out = l.oneHot;
  auto du = buildCountDecode(units, ds);
  EXPECT_TRUE(du.ok()) << du.error().message;
  probe(w, 0, Field{"b", l.ballast.at(0), 1});
  probe(w, 1, l.atLeast);
  probe(w, 1 + l.atLeast.dims, l.oneHot);
  probe(w, levelProbe(), Field{"level", l.quiet.at(0), 1});
  return write(w, name);
}

// n at every position: events since the last reset, kNever before the first reset.
std::vector<int> counts(const std::vector<int64_t>& tokens) {
  std::vector<int> n;
  int cur = kNever;
  for (int64_t t : tokens) {
    if (t == kReset)
      cur = 0;
    else if (t == kEvent && cur != kNever)
      ++cur;
    n.push_back(cur);
  }
  return n;
}

// The most events in any 64 consecutive tokens.
int densestWindow(const std::vector<int64_t>& tokens) {
  int best = 0, in = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    in += tokens[i] == kEvent;
    if (i >= 64) in -= tokens[i - 64] == kEvent;
    best = std::max(best, in);
  }
  return best;
}

// Events before any reset, resets mid-chunk and back to back, events right after a reset, dense
// random bursts (capped at 24 events per 64 tokens, the chunked path's limit), then a climb to 120
// in bursts of 20 consecutive events.
std::vector<int64_t> program(uint32_t seed) {
  std::vector<int64_t> t = {kPlain, kEvent, kEvent, kPlain, kPlain, kReset, kEvent, kPlain,
                            kReset, kReset, kEvent, kEvent, kReset, kPlain, kEvent};
  std::mt19937 rng(seed);
  auto push = [&](int64_t tok) {
    t.push_back(tok);
    if (tok == kEvent && densestWindow(t) > 24) t.back() = kPlain;
  };
  for (int i = 0; i < 200; ++i) {
    const uint32_t r = rng() % 100;
    push(r < 4 ? kReset : r < 60 ? kEvent : kPlain);
  }
  for (int p = 0; p < 64; ++p) push(kPlain);
  push(kReset);
  for (int burst = 0; burst < 6; ++burst) {
    for (int e = 0; e < 20; ++e) push(kEvent);
    for (int p = 0; p < 44; ++p) push(kPlain);
  }
  return t;
}

struct Result {
  SignCheck bits;
  int64_t levelWrong = 0;
  double levelRelErr = 0;  // largest |got/want − 1| over the checked levels (0 where want is 0)
  std::string worstLevel;
  std::string firstLevel;
  float ballastMin = 1e30f, ballastMax = 0;
};

Result check(const std::vector<int64_t>& tokens, const std::vector<std::vector<float>>& rows,
             ComputeDtype dtype) {
  Result r;
  const std::vector<int> n = counts(tokens);
  EXPECT_EQ(rows.size(), tokens.size());
  for (size_t p = 0; p < rows.size() && p < n.size(); ++p) {
    const std::vector<float>& row = rows[p];
    r.ballastMin = std::min(r.ballastMin, row[0]);
    r.ballastMax = std::max(r.ballastMax, row[0]);
    const int64_t big = n[p] == kNever ? int64_t{1} << 40 : n[p];
    std::vector<bool> bits;
    for (int N : kThresholds) bits.push_back(big >= N);
    for (int j = 0; j < kDecodeK; ++j) bits.push_back(big == j);
    bits.push_back(big >= kDecodeK);
    std::vector<float> fields(row.begin() + 1, row.begin() + 1 + static_cast<long>(bits.size()));
    checkBits(r.bits, fields, bits, 1.0,
              "position " + std::to_string(p) + " (n = " + std::to_string(n[p]) + ")");
    // The level: 2^(e0 − n) in the residual, /16 through the final norm. In bf16 only normal
    // levels (≥ 2^-126, n ≤ 112) are checked: on a CPU with AVX512-BF16 (an AMD EPYC) the bf16
    // path gave 0 for the subnormal level 2^-127, where an AVX2 machine kept levels down to
    // 2^-133 (flushing subnormals is the hardware's choice); the decisions above are checked at
    // every n either way.
    const bool checkable = n[p] == kNever || dtype == ComputeDtype::F32 || n[p] <= 112;
    const float want = n[p] == kNever ? 0.0f : std::ldexp(1.0f, kLevelExp - 4 - n[p]);
    const float got = row[static_cast<size_t>(levelProbe())];
    if (checkable && want != 0 && std::fabs(static_cast<double>(got) / want - 1) > r.levelRelErr) {
      r.levelRelErr = std::fabs(static_cast<double>(got) / want - 1);
      r.worstLevel = "position " + std::to_string(p) + " n = " + std::to_string(n[p]);
    }
    if (checkable && want == 0 && got != 0) r.levelRelErr = 1e30;
    if (checkable && got != want) {
      if (r.levelWrong++ == 0)
        r.firstLevel = "position " + std::to_string(p) + " n = " + std::to_string(n[p]) +
                       ": level " + std::to_string(got) + " (2^" +
                       std::to_string(std::log2(std::fabs(got))) + "), want 2^" +
                       std::to_string(kLevelExp - 4 - n[p]);
    }
  }
  return r;
}

bool fullRun() {
  const char* full = std::getenv("QGPU_CIRCUIT_FULL");
  return full != nullptr && std::string(full) == "1";
}

// Runs `tokens` on `paths` in `dtype`, checks every position, and demands the paths agree with the
// first bit for bit.
// With `exact` false (the key head dim 128 finding) every decision must still be right and every
// magnitude within `tolerance` of nominal, but not bit for bit.
void runAndCheck(const std::string& dir, ComputeDtype dtype, const std::vector<int64_t>& tokens,
                 const std::vector<Path>& paths, bool exact = true, double bitTolerance = 0,
                 double levelTolerance = 0) {
  auto dec = load(dir, dtype);
  ASSERT_TRUE(dec);
  std::vector<std::vector<float>> first;
  for (Path path : paths) {
    const auto t0 = std::chrono::steady_clock::now();
    auto rows = run(*dec, tokens, path, probeCount());
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Result r = check(tokens, rows, dtype);
    std::cout << "[counter] " << (dtype == ComputeDtype::F32 ? "fp32" : "bf16") << " "
              << pathName(path) << ": " << tokens.size() << " tokens, " << r.bits.summary()
              << "; level wrong " << r.levelWrong << "; ballast probe in [" << r.ballastMin << ", "
              << r.ballastMax << "] (" << secs << " s)\n";
    if (!exact) {
      EXPECT_LE(r.ballastMax - 1, bitTolerance);
      EXPECT_LE(1 - r.ballastMin, bitTolerance);
      std::cout << "[counter]   largest level error " << r.levelRelErr << " at " << r.worstLevel
                << "\n";
      EXPECT_EQ(r.bits.wrongSign, 0) << r.bits.summary();
      EXPECT_LE(r.bits.maxRatio - 1, bitTolerance) << r.bits.summary();
      EXPECT_LE(1 - r.bits.minRatio, bitTolerance) << r.bits.summary();
      EXPECT_LE(r.levelRelErr, levelTolerance) << r.worstLevel;
      continue;
    }
    EXPECT_TRUE(r.bits.ok()) << r.bits.summary();
    EXPECT_EQ(r.levelWrong, 0) << r.firstLevel;
    EXPECT_EQ(r.ballastMin, 1.0f);
    EXPECT_EQ(r.ballastMax, 1.0f);
    if (first.empty()) {
      first = rows;
    } else {
      int64_t differ = 0;
      for (size_t p = 0; p < rows.size() && p < first.size(); ++p) differ += rows[p] != first[p];
      EXPECT_EQ(differ, 0) << "positions where " << pathName(path) << " and " << pathName(paths[0])
                           << " differ";
    }
  }
}

// The whole program (664 tokens, 11 chunks, counts to 120) through the chunked prefill, both
// dtypes; with QGPU_CIRCUIT_FULL=1 also through the decode and mixed paths.
TEST(Counter, DecidesEveryThresholdAndOneHotExactlyInFp32AndBf16) {
  const std::string dir = build("counter");
  const std::vector<int64_t> tokens = program(7);
  ASSERT_LE(densestWindow(tokens), 24);
  ASSERT_GT(tokens.size(), 10u * 64u);
  const std::vector<int> n = counts(tokens);
  ASSERT_EQ(*std::max_element(n.begin(), n.end()), 120);
  for (ComputeDtype dtype : kDtypes) {
    if (fullRun())
      runAndCheck(dir, dtype, tokens, {Path::Prefill, Path::Decode, Path::Mixed});
    else
      runAndCheck(dir, dtype, tokens, {Path::Prefill});
  }
}

// Decode and mixed (a cached continuation, then one token at a time) agree with the prefill bit
// for bit and are exact: fp32 on the first 180 tokens of another program (3 chunks, the random
// bursts with resets mid-chunk), bf16 on its first 72 (LibTorch's bf16 decode is ~130 ms a token
// here); QGPU_CIRCUIT_FULL=1 runs bf16 on all 180.
TEST(Counter, DecodeAndMixedPathsAreExactAndBitIdenticalToThePrefill) {
  const std::string dir = build("counter_paths");
  const std::vector<int64_t> all = program(11);
  for (ComputeDtype dtype : kDtypes) {
    const size_t n = dtype == ComputeDtype::F32 || fullRun() ? 180 : 72;
    const std::vector<int64_t> tokens(all.begin(), all.begin() + static_cast<long>(n));
    runAndCheck(dir, dtype, tokens, {Path::Prefill, Path::Decode, Path::Mixed});
  }
}

// The real checkpoint's key head dim is 128, whose dk^-½ = 2^-3.5 is rounded. The failing twin,
// one-row heads (ReadHeight::Nominal, the first build): every decision is still right and the
// level stays tiny, but (1) fp32 field magnitudes come back up to
// a few ulp off (the gated norm of 8 hot channels of s·2^k is not exactly √16 for a rounded s), so
// λ downstream moves by ulps; (2) the chunked read of the a-th event in a chunk sums a terms of
// s·2^-b·row, each with s's full mantissa, so the level's relative error grows as 2^(a−24): 41 %
// at a = 24 (measured), against the decision margin of 50 % up / 25 % down; bf16 rounds the ulps
// away but not (2). With dk = 64 (s = 1/8) or the gadget's read at 128 (below) everything is exact.
TEST(Counter, FailingTwinOneRowHeadsAtKeyHeadDim128AreRightButMagnitudesUlpsOff) {
  const std::string dir =
      build("counter_dk128_nominal", EventCounterTwin::None, 128, ReadHeight::Nominal);
  const std::vector<int64_t> tokens = program(7);
  runAndCheck(dir, ComputeDtype::F32, tokens, {Path::Prefill}, false, 1e-5, 0.45);
  const std::vector<int64_t> head(tokens.begin(), tokens.begin() + 72);
  runAndCheck(dir, ComputeDtype::F32, head, {Path::Decode, Path::Mixed}, false, 1e-5, 1e-4);
  runAndCheck(dir, ComputeDtype::BF16, head, {Path::Prefill, Path::Mixed}, false, 0, 1.0 / 32);
  auto dec = load(dir, ComputeDtype::F32);
  ASSERT_TRUE(dec);
  const Result r = check(tokens, run(*dec, tokens, Path::Prefill, probeCount()), ComputeDtype::F32);
  EXPECT_GT(r.bits.inexact + r.levelWrong, 0) << "the twin must show the ulps";
}

// The heads' read at key head dim 128 (circuit/tap.h "The read height": a 4-hot key, a two-row
// query, value gains doubled): every decision and one-hot bit exact, the level exactly
// 2^(−14−n) on the prefill of 664 tokens and on the decode / mixed paths, fp32 and bf16 — the
// dk = 64 result, where the one-row heads (the twin above) were ulps off and the chunked level up
// to 41 % off.
TEST(Counter, AtKeyHeadDim128EveryDecisionAndTheLevelAreExact) {
  const std::string dir = build("counter_dk128", EventCounterTwin::None, 128);
  const std::vector<int64_t> tokens = program(7);
  runAndCheck(dir, ComputeDtype::F32, tokens, {Path::Prefill});
  const std::vector<int64_t> head(tokens.begin(), tokens.begin() + 72);
  runAndCheck(dir, ComputeDtype::F32, head, {Path::Decode, Path::Mixed});
  runAndCheck(dir, ComputeDtype::BF16, head, {Path::Prefill, Path::Mixed});
}

// Each twin breaks one rule of the header and must give wrong decisions (fp32, prefill).
TEST(Counter, TwinsWithBetaOffOrNoCompanionDecideWrongly) {
  const std::vector<int64_t> tokens = program(7);
  for (EventCounterTwin twin : {EventCounterTwin::BetaOff, EventCounterTwin::NoCompanion}) {
    const std::string name = twin == EventCounterTwin::BetaOff ? "beta_off" : "no_companion";
    auto dec = load(build("counter_" + name, twin), ComputeDtype::F32);
    ASSERT_TRUE(dec);
    const Result r =
        check(tokens, run(*dec, tokens, Path::Prefill, probeCount()), ComputeDtype::F32);
    std::cout << "[counter twin " << name << "] " << r.bits.summary() << "; level wrong "
              << r.levelWrong << "\n";
    EXPECT_GT(r.bits.wrongSign, 0) << name;
    EXPECT_GT(r.levelWrong, 0) << name;
  }
}

// The chunked rule's limit: 30 events in one 64-token chunk need 30 significant bits, beyond
// fp32's 24. The recurrent decode stays exact. The prefill's outcome depends on the CPU's GEMM
// kernels: on AVX2 OpenBLAS it lost the count (decisions wrong); on an AVX512 machine it stayed
// exact. Either way it is outside the counter's contract (≤ 24 halvings since the last reset in
// one chunk), so only the decode is asserted and the prefill is reported.
TEST(Counter, MoreThan24EventsInOneChunkStayExactOnTheDecode) {
  std::vector<int64_t> tokens = {kPlain, kReset};
  for (int e = 0; e < 30; ++e) tokens.push_back(kEvent);
  while (tokens.size() < 100) tokens.push_back(kPlain);
  auto dec = load(build("counter_dense"), ComputeDtype::F32);
  ASSERT_TRUE(dec);
  const Result pre =
      check(tokens, run(*dec, tokens, Path::Prefill, probeCount()), ComputeDtype::F32);
  const Result one =
      check(tokens, run(*dec, tokens, Path::Decode, probeCount()), ComputeDtype::F32);
  std::cout << "[counter dense] prefill: " << pre.bits.summary() << "; level wrong "
            << pre.levelWrong << " (" << pre.firstLevel
            << ")\n[counter dense] decode: " << one.bits.summary() << "\n";
  EXPECT_TRUE(one.bits.ok()) << one.bits.summary();
  EXPECT_EQ(one.levelWrong, 0) << one.firstLevel;
}

// The limit is on halvings since the last reset, not on events per chunk: a record-like pattern
// (a reset, then 4 consecutive events, repeated: 51 events in 64 tokens, as `WR(r)` records of
// one-chunk values would give) is exact on the prefill too.
TEST(Counter, DenseEventsBetweenFrequentResetsAreExactOnThePrefill) {
  std::vector<int64_t> tokens = {kPlain};
  while (tokens.size() < 200) {
    tokens.push_back(kReset);
    for (int e = 0; e < 4; ++e) tokens.push_back(kEvent);
  }
  int inFirstChunk = 0;
  for (size_t i = 0; i < 64; ++i) inFirstChunk += tokens[i] == kEvent;
  ASSERT_GT(inFirstChunk, 48);
  const std::string dir = build("counter_records");
  runAndCheck(dir, ComputeDtype::F32, tokens, {Path::Prefill, Path::Mixed});
  runAndCheck(dir, ComputeDtype::BF16, tokens, {Path::Prefill});
}

TEST(Counter, RefusesSpecsOutsideItsRules) {
  CircuitWeights w(config(kHidden, 2, 32, 64));
  const Layout l = layout();
  EventCounterSpec cs;
  cs.ballast = l.ballast;
  cs.event = l.event.at(0);
  cs.reset = l.reset.at(0);
  cs.quiet = l.quiet.at(0);
  cs.lambda = 1.5;  // not a power of two
  EXPECT_EQ(buildEventCounter(w, cs).error().kind, ErrorKind::Usage);
  cs.lambda = 1.0 / 1024;  // a power of two outside 2^-8..2^8
  EXPECT_EQ(buildEventCounter(w, cs).error().kind, ErrorKind::Usage);
  cs.lambda = 1;
  cs.levelExp = -2;  // ℓ(0)² = 2^-4 would change Σx²
  EXPECT_EQ(buildEventCounter(w, cs).error().kind, ErrorKind::Usage);
  cs.levelExp = -10;
  cs.gain = 64;  // λG = 64 < 89
  EXPECT_EQ(buildEventCounter(w, cs).error().kind, ErrorKind::OverLimit);
  cs.gain = 128;
  EXPECT_TRUE(buildEventCounter(w, cs).ok());

  EXPECT_EQ(thresholdRange(-10, 1, 16), 105);
  ThresholdSpec ts;
  ts.layer = 1;
  ts.ballast = l.ballast;
  ts.quiet = l.quiet.at(0);
  ts.out = l.atLeast.at(0);
  ts.threshold = 106;  // K = 2^128 would overflow
  EXPECT_EQ(buildThreshold(w, ts).error().kind, ErrorKind::Usage);
  ts.threshold = 0;
  EXPECT_EQ(buildThreshold(w, ts).error().kind, ErrorKind::Usage);
  ts.threshold = 105;
  EXPECT_TRUE(buildThreshold(w, ts).ok());

  UnitWriter units(w, 1);
  CountDecodeSpec ds;
  ds.ballast = l.ballast;
  ds.out = l.oneHot;  // K + 1 = 9 dims but no thermometer dims
  EXPECT_EQ(buildCountDecode(units, ds).error().kind, ErrorKind::Usage);
  for (int j = 0; j < kDecodeK; ++j) ds.atLeast.push_back(l.atLeast.at(j));
  ds.gain = 64;  // λG = 64 < 89
  EXPECT_EQ(buildCountDecode(units, ds).error().kind, ErrorKind::OverLimit);
  ds.gain = 128;
  auto used = buildCountDecode(units, ds);
  ASSERT_TRUE(used.ok()) << used.error().message;
  EXPECT_EQ(used.value(), 2 * kDecodeK + 3);
}

}  // namespace
}  // namespace qgpu::circuit
