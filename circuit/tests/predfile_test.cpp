// qgpu/circuit/tests/predfile_test.cpp — the predicate file (circuit/predfile.h) run through
// model/'s real decoder (circuit/tests/harness.h): three standard linear_attention layers over the
// trace vocabulary's embedding, fp32 and bf16, the chunked prefill (many 64-token chunks), the
// recurrent decode and the mixed path.
//
// What it pins down: at every position of token sequences in the trace grammar — hand-made records
// (WP of every predicate with random bits within m, between WR / WU / MG / MS / NOP records, CTA
// starts, blocks entered again and again) and real runs of random programs (gen/, run by the
// interpreter, the first with its prompt) — both ports' fields (2 ports × 8 value dims: the 4 lane
// bits and 4 dims that always read 0) are exactly ±1 at the probe and equal to the test's array
// model of docs/trace.md + docs/machine.md §4: preds[p] = the 4-bit value of the last `WP(p)` of
// the current block, 0 (unset = false) after every `EX` (block entry) and `CTA`.
//
// Read requests: probe tokens (after the trace's rows; no family, not a chunk) hold a predicate
// index per port; they are inserted where no value is interrupted. On trace tokens the read keys
// hold the layout's +u pads: every trace position reads p7 on both ports — also checked.
//
// Failing twins: cleared at CTA only (a predicate of an earlier block survives block entry) and a
// write enable that ignores the tag (every value writes) must give wrong bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "circuit/predfile.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/record_streams.h"
#include "circuit/tokens.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 256;
constexpr int kPorts = 2;
constexpr int kPreds = 8;
constexpr int kDims = 8;  // per port: 4 lane bits + 4 zero dims
constexpr int kProbes = 64;
constexpr int kProbeLogits = kPorts * kDims;
constexpr int64_t kVocab = std::max<int64_t>({trace::kVocabSize + kProbes, kHidden});
constexpr float kUnit = 16;

struct Request {
  std::array<int, kPorts> pred{};
};
constexpr Request kPadRequest = {{7, 7}};
Request probeRequest(int i) { return Request{{i % kPreds, (i / kPreds + 3 * i) % kPreds}}; }

model::Qwen35Config config(int keyHeadDim) {
  model::Qwen35Config c = harness::config(kHidden, 3, 512, kVocab);
  c.linearNumKeyHeads = c.linearNumValueHeads = 4;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Bench {
  std::string dir;
  PredicateFile pf;
  int64_t heavyPad = -1;
};

struct Stage {
  int layer = 0;
  bool withMlp = true;
};

Bench build(const std::string& name, PredicateFileTwin twin = PredicateFileTwin::None,
            int keyHeadDim = 64, ReadHeight read = ReadHeight::Nominal,
            const Stage* stage = nullptr) {
  CircuitWeights w(config(keyHeadDim));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  PredicateFileSpec s;
  s.tokens = tokens;
  s.ports = kPorts;
  s.twin = twin;
  s.read = read;
  for (int p = 0; p < kPorts; ++p) s.readKey.push_back(alloc.take("key", 3).value());
  auto pf = buildPredicateFile(w, alloc, s);
  EXPECT_TRUE(pf.ok()) << pf.error().message;
  Bench b;
  if (!pf.ok()) return b;
  b.pf = pf.value();
  for (int i = 0; i < kProbes; ++i) {
    const int64_t row = trace::kVocabSize + i;
    harness::fillRow(w, row, kUnit);
    for (const Field& f :
         {tokens.family, tokens.index, tokens.chunk, tokens.isChunk, tokens.isTerminal})
      harness::setSigns(w, row, f, 0, kUnit);
    const Request r = probeRequest(i);
    for (int p = 0; p < kPorts; ++p)
      harness::setSigns(w, row, s.readKey[static_cast<size_t>(p)],
                        static_cast<uint64_t>(r.pred[static_cast<size_t>(p)]), kUnit);
  }
  if (stage) {
    harness::silenceAfter(w, stage->layer, stage->withMlp);
    harness::probe(w, 0, Field{"all", 0, kHidden});
  } else {
    for (int p = 0; p < kPorts; ++p) harness::probe(w, p * kDims, b.pf.out[static_cast<size_t>(p)]);
  }
  b.dir = harness::write(w, "predfile_" + name);
  return b;
}

// ---- The array model ----

struct Model {
  std::array<uint32_t, kPreds> preds{};
  int rec = -1;  // the predicate of the open WP record, −1 when the open record is another
  streams::ValueReader reader;
  int writes = 0, resets = 0, staleAvoided = 0;

  void step(int64_t id) {
    if (id >= trace::kVocabSize) return;  // a probe token
    const Token t = static_cast<Token>(id);
    const Family f = trace::familyOf(t);
    uint32_t v = 0;
    if (reader.step(t, v)) {
      if (rec >= 0) {
        preds[static_cast<size_t>(rec)] = v;
        ++writes;
      }
      rec = -1;  // WP has one value
      return;
    }
    if (f == Family::Ex || f == Family::Cta) {  // block entry, CTA start: every predicate unset
      staleAvoided += std::count_if(preds.begin(), preds.end(), [](uint32_t x) { return x != 0; });
      preds = {};
      ++resets;
    }
    if (f == Family::C || f == Family::T) return;
    if (f == Family::Wp) rec = trace::indexOf(t);
    else if (f == Family::Wr || f == Family::Wu || f == Family::Mg || f == Family::Ms ||
             f == Family::Nop)
      rec = -1;
  }
  std::vector<bool> read(const Request& q) const {
    std::vector<bool> bits;
    for (int p = 0; p < kPorts; ++p) {
      const uint32_t v = preds[static_cast<size_t>(q.pred[static_cast<size_t>(p)])];
      for (int b = 0; b < kDims; ++b) bits.push_back((v >> b) & 1);
    }
    return bits;
  }
};

std::vector<int64_t> withProbes(const std::vector<Token>& trace, uint32_t seed, double rate) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out;
  int lastWp = -1;  // half of the probes read the predicate written last on port 0
  for (size_t i = 0; i < trace.size(); ++i) {
    const bool afterC = i > 0 && trace::familyOf(trace[i - 1]) == Family::C;
    if (!afterC && static_cast<double>(rng() % 1000) < rate * 1000) {
      int probe = static_cast<int>(rng() % kProbes);
      if (lastWp >= 0 && rng() % 2) probe = probe / kPreds * kPreds + lastWp;
      out.push_back(trace::kVocabSize + probe);
    }
    out.push_back(trace[i]);
    if (trace::familyOf(trace[i]) == Family::Wp) lastWp = trace::indexOf(trace[i]);
  }
  return out;
}

struct Expect {
  std::vector<std::vector<bool>> bits;
  int writes = 0, resets = 0, probes = 0, nonzeroReads = 0, staleAvoided = 0;
};

Expect expect(const std::vector<int64_t>& tokens) {
  Model m;
  Expect e;
  for (int64_t id : tokens) {
    m.step(id);
    const bool probe = id >= trace::kVocabSize;
    e.probes += probe ? 1 : 0;
    e.bits.push_back(m.read(probe ? probeRequest(static_cast<int>(id - trace::kVocabSize))
                                  : kPadRequest));
    e.nonzeroReads += std::count(e.bits.back().begin(), e.bits.back().end(), true) > 0 ? 1 : 0;
  }
  e.writes = m.writes;
  e.resets = m.resets;
  e.staleAvoided = m.staleAvoided;
  return e;
}

harness::SignCheck runAndCheck(const Bench& b, const std::vector<int64_t>& tokens,
                               ComputeDtype dtype, Path path) {
  harness::SignCheck c;
  auto dec = harness::load(b.dir, dtype);
  if (!dec) return c;
  const auto rows = harness::run(*dec, tokens, path, kProbeLogits);
  const Expect e = expect(tokens);
  EXPECT_EQ(rows.size(), tokens.size());
  for (size_t p = 0; p < rows.size() && p < e.bits.size(); ++p)
    harness::checkBits(c, rows[p], e.bits[p], 1.0, "position " + std::to_string(p));
  return c;
}

std::vector<int64_t> prefix(const std::vector<int64_t>& t, size_t n) {
  return {t.begin(), t.begin() + static_cast<long>(std::min(n, t.size()))};
}

const char* dtypeName(ComputeDtype d) { return d == ComputeDtype::F32 ? "fp32" : "bf16"; }

void runMatrix(const Bench& b, const std::vector<int64_t>& tokens, const std::string& what) {
  const Expect e = expect(tokens);
  std::cout << what << ": " << tokens.size() << " tokens, " << e.writes << " WP writes, "
            << e.resets << " resets (EX, CTA), " << e.staleAvoided
            << " set predicates cleared at a reset, " << e.probes << " probe positions, "
            << e.nonzeroReads << " positions reading a nonzero predicate\n";
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const bool f32 = dtype == ComputeDtype::F32;
      const size_t n = path == Path::Prefill ? (f32 ? tokens.size() : harness::inputs(300, 1000))
                       : path == Path::Mixed ? harness::inputs(f32 ? 200 : 160, f32 ? 1000 : 600)
                                             : harness::inputs(f32 ? 120 : 80, f32 ? 1000 : 300);
      const std::vector<int64_t> t = prefix(tokens, n);
      const auto start = std::chrono::steady_clock::now();
      const harness::SignCheck c = runAndCheck(b, t, dtype, path);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << "  " << dtypeName(dtype) << " " << harness::pathName(path) << " (" << t.size()
                << " tokens, " << s << " s): " << c.summary() << "\n";
      EXPECT_TRUE(c.ok()) << what << " " << dtypeName(dtype) << " " << harness::pathName(path)
                          << ": " << c.summary();
    }
}

TEST(PredicateFile, HandMadeRecordsReadExactlyOnEveryPath) {
  const Bench b = build("hand");
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, harness::inputs(80, 250)), 11, 0.3);
  ASSERT_GT(tokens.size(), 5u * 64);
  const Expect e = expect(tokens);
  ASSERT_GT(e.writes, 30);
  ASSERT_GT(e.staleAvoided, 20);  // the block-entry reset matters
  runMatrix(b, tokens, "hand-made records");
}

TEST(PredicateFile, RealRunsOfRandomProgramsReadExactlyOnEveryPath) {
  const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  // The first run with its prompt (the prompt starts a trace), then runs after CTA tokens.
  std::vector<int64_t> tokens;
  int seeds = 0;
  const size_t total = static_cast<size_t>(harness::inputs(1400, 4000));
  for (uint64_t seed = 1; tokens.size() < total; ++seed) {
    const std::vector<Token> t = streams::realRun(seed, seed == 1 ? 600 : 250, seed == 1);
    ASSERT_FALSE(t.empty());
    const std::vector<int64_t> one = withProbes(t, static_cast<uint32_t>(seed), 0.25);
    tokens.insert(tokens.end(), one.begin(), one.end());
    tokens.push_back(trace::single(Family::Cta));
    ++seeds;
  }
  const Expect e = expect(tokens);
  std::cout << seeds << " programs\n";
  ASSERT_GT(e.writes, 20);
  runMatrix(b, tokens, "real runs");
}

// The full layout at every layer and MLP input: every dim of every position exactly ±1.
TEST(PredicateFile, EveryDimIsExactlyPlusMinusUnitAtEveryLayerInput) {
  const std::vector<int64_t> tokens = prefix(withProbes(streams::handMade(7, 80), 11, 0.3), 300);
  std::vector<Stage> stages = {{-1, true}};
  for (int l = 0; l < 3; ++l) stages.push_back({l, false}), stages.push_back({l, true});
  for (ComputeDtype dtype : harness::kDtypes)
    for (const Stage& st : stages) {
      if (dtype == ComputeDtype::BF16 && st.layer != 2) continue;
      const Bench b = build("stage", PredicateFileTwin::None, 64, ReadHeight::Nominal, &st);
      auto dec = harness::load(b.dir, dtype);
      ASSERT_TRUE(dec);
      const size_t n = dtype == ComputeDtype::F32 ? tokens.size() : 100;
      const harness::LayoutCheck c =
          harness::checkLayout(harness::run(*dec, prefix(tokens, n), Path::Prefill, kHidden), 1.0f);
      std::cout << dtypeName(dtype) << " after layer " << st.layer
                << (st.withMlp ? " (with its MLP)" : " (attention only)") << ": " << c.summary()
                << "\n";
      EXPECT_TRUE(c.ok()) << "layer " << st.layer << " " << st.withMlp << ": " << c.summary();
    }
}

harness::SignCheck twinRun(PredicateFileTwin twin, const std::string& name) {
  const Bench b = build(name, twin);
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, 80), 11, 0.3);
  return runAndCheck(b, tokens, ComputeDtype::F32, Path::Prefill);
}

TEST(PredicateFileTwin, CtaOnlyResetKeepsAnEarlierBlocksPredicates) {
  const harness::SignCheck c = twinRun(PredicateFileTwin::CtaOnly, "ctaonly");
  std::cout << "CTA-only reset: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 100);
}

TEST(PredicateFileTwin, AnyValueWritesOtherRecordsValues) {
  const harness::SignCheck c = twinRun(PredicateFileTwin::AnyValue, "anyvalue");
  std::cout << "any value writes: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 100);
}

// Key head dim 128 (the `2b` shape): the heads' 4-row cells (ReadHeight::Exact, 8 cells = 32 key
// rows) read exactly in fp32 and bf16; the one-row twin keeps every sign but is ulps off in fp32.
TEST(PredicateFile, KeyHeadDim128IsExactWithFourRowCells) {
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, 80), 11, 0.3);
  const Bench b = build("dk128", PredicateFileTwin::None, 128, ReadHeight::Exact);
  ASSERT_FALSE(b.dir.empty());
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const size_t n = path == Path::Prefill ? (dtype == ComputeDtype::F32 ? tokens.size() : 200)
                                             : 110;
      const harness::SignCheck c = runAndCheck(b, prefix(tokens, n), dtype, path);
      std::cout << "key head dim 128, " << dtypeName(dtype) << " " << harness::pathName(path)
                << " (" << std::min(n, tokens.size()) << " tokens): " << c.summary() << "\n";
      EXPECT_TRUE(c.ok()) << c.summary();
    }
  const Bench nominal = build("dk128n", PredicateFileTwin::None, 128, ReadHeight::Nominal);
  const harness::SignCheck c = runAndCheck(nominal, tokens, ComputeDtype::F32, Path::Prefill);
  std::cout << "key head dim 128, one-row cells (twin), fp32 prefill: " << c.summary() << "\n";
  EXPECT_EQ(c.wrongSign, 0);
  EXPECT_GT(c.inexact, 0);
}

TEST(PredicateFileRefuses, ASpecThatDoesNotFit) {
  CircuitWeights w(config(64));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  PredicateFileSpec s;
  s.tokens = tokens;
  s.ports = 5;  // more than the guard, the two sources and dstPred
  for (int p = 0; p < 5; ++p) s.readKey.push_back(alloc.take("k", 3).value());
  auto r = buildPredicateFile(w, alloc, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  s.ports = 1;
  s.readKey = {alloc.take("k", 4).value()};  // a read key of the wrong width
  r = buildPredicateFile(w, alloc, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("read key"), std::string::npos) << r.error().message;
  s.readKey = {alloc.take("k", 3).value()};
  s.layer0 = 1;  // layers 1..3 of a 3-layer config
  r = buildPredicateFile(w, alloc, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("layers"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace qgpu::circuit
