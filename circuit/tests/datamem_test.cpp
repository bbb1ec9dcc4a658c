// qgpu/circuit/tests/datamem_test.cpp — the data memories (circuit/datamem.h) run through
// model/'s real decoder (circuit/tests/harness.h): five standard linear_attention layers over the
// trace vocabulary's embedding, fp32 and bf16, the chunked prefill (many 64-token chunks), the
// recurrent decode and the mixed path.
//
// What it pins down: at every position of token sequences in the trace grammar — hand-made
// (GMEM / GW pairs, then MG / MS records of random lanes with word indices 0..125, mostly a few
// hot words so that words are rewritten and read back, between WR / WU / WP / NOP records and CTA
// starts) and real runs of random programs (gen/, run by the interpreter, the first with its
// prompt) — every lane's read of both spaces (2 × 4 × 32 bits) and its fault bit are exactly ±1
// at the probe and equal to the test's array model of docs/trace.md: global[word] ← the GW value
// after `GMEM v(word)`, and ← value_k at the k-th (word, value) pair of an `MG` record; shared
// likewise from `MS`, all zero at `CTA`; an unwritten word reads 0; fault = high ∨ word ≥ 126.
//
// Read requests: probe tokens (after the trace's rows; no family, not a chunk) hold per space per
// lane a word index and the `high` bit; they are inserted where no value is interrupted. On trace
// tokens the read addresses hold the layout's +u pads: word 127 with high set (never written,
// faults) — also checked.
//
// Failing twins: the pair rank shifted by one (addresses latched at values) and shared memory not
// cleared at CTA must give wrong bits. Key head dim 128 (the `2b` shape): 4-row cells exact
// (4 heads per port), one-row cells (1 head per port) signs right but fp32 ulps off.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "circuit/datamem.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/record_streams.h"
#include "circuit/tokens.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 512;
constexpr int kLanes = 4;
constexpr int kSpaces = 2;
constexpr int kProbes = 64;
constexpr int kPerLane = 33;  // 32 value bits, the fault bit
constexpr int kProbeLogits = kSpaces * kLanes * kPerLane;
constexpr int64_t kVocab = std::max<int64_t>({trace::kVocabSize + kProbes, kProbeLogits, kHidden});
constexpr float kUnit = 16;
constexpr int kWords = machine::kGlobalWords;
static_assert(machine::kGlobalWords == machine::kSharedWords, "one fault bound in the model");

struct Address {
  int word = 0;
  bool high = false;
};
struct Request {
  std::array<std::array<Address, kLanes>, kSpaces> a{};
};
Request padRequest() {
  Request q;
  for (auto& sp : q.a)
    for (auto& l : sp) l = {127, true};
  return q;
}
// Probe i: mostly the hot words 0..5, a third any word, i % 16 == 15 the words 126 / 127 (faults),
// i % 16 == 7 one lane with `high` set.
Request probeRequest(int i) {
  Request q;
  for (int sp = 0; sp < kSpaces; ++sp)
    for (int l = 0; l < kLanes; ++l) {
      Address& a = q.a[static_cast<size_t>(sp)][static_cast<size_t>(l)];
      const int r = (i * 7 + l * 3 + sp * 5) % 3;
      a.word = i % 16 == 15 ? 126 + (l & 1)
               : r == 0     ? (i * 37 + l * 11 + sp * 5) % kWords
                            : (i + l + 2 * sp) % 6;
      a.high = i % 16 == 7 && l == (i / 16) % kLanes;
    }
  return q;
}

model::Qwen35Config config(int keyHeadDim, int heads) {
  model::Qwen35Config c = harness::config(kHidden, 5, 512, kVocab);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Bench {
  std::string dir;
  DataMemory dm;
};

struct Options {
  DataMemoryTwin twin = DataMemoryTwin::None;
  int keyHeadDim = 64;
  ReadHeight read = ReadHeight::NormRail;  // the gadget's default
  bool shared = true;
  int heads = 16;
  int stageLayer = -2;  // ≥ −1: probe every residual dim after that layer (with its MLP)
  bool stageWithMlp = true;
};

Bench build(const std::string& name, const Options& o = {}) {
  CircuitWeights w(config(o.keyHeadDim, o.heads));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  DataMemorySpec s;
  s.tokens = tokens;
  s.twin = o.twin;
  s.read = o.read;
  s.spaces[1] = o.shared;
  for (int sp = 0; sp < kSpaces; ++sp)
    if (s.spaces[sp])
      for (int l = 0; l < kLanes; ++l)
        s.readAddr[static_cast<size_t>(sp)].push_back(alloc.take("addr", 8).value());
  auto dm = buildDataMemory(w, alloc, s);
  EXPECT_TRUE(dm.ok()) << dm.error().message;
  Bench b;
  if (!dm.ok()) return b;
  b.dm = dm.value();
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int i = 0; i < kProbes; ++i) {
    const int64_t row = trace::kVocabSize + i;
    harness::fillRow(w, row, kUnit);
    for (const Field& f :
         {tokens.family, tokens.index, tokens.chunk, tokens.isChunk, tokens.isTerminal})
      harness::setSigns(w, row, f, 0, kUnit);
    for (int q = 0; q < b.dm.quiet.dims; ++q) EXPECT_TRUE(w.set(e, row, b.dm.quiet.at(q), 0).ok());
    EXPECT_TRUE(w.set(e, row, b.dm.heavy.at(0), 2 * kUnit).ok());
    const Request r = probeRequest(i);
    for (int sp = 0; sp < kSpaces; ++sp)
      if (s.spaces[sp])
        for (int l = 0; l < kLanes; ++l) {
          const Address& a = r.a[static_cast<size_t>(sp)][static_cast<size_t>(l)];
          harness::setSigns(w, row, s.readAddr[static_cast<size_t>(sp)][static_cast<size_t>(l)],
                            static_cast<uint64_t>(a.word | (a.high ? 128 : 0)), kUnit);
        }
  }
  if (o.stageLayer >= -1) {
    harness::silenceAfter(w, o.stageLayer, o.stageWithMlp);
    harness::probe(w, 0, Field{"all", 0, kHidden});
  } else {
    for (int sp = 0; sp < kSpaces; ++sp)
      if (s.spaces[sp])
        for (int l = 0; l < kLanes; ++l) {
          const int first = (sp * kLanes + l) * kPerLane;
          harness::probe(w, first, b.dm.out[static_cast<size_t>(sp)][static_cast<size_t>(l)]);
          harness::probe(w, first + 32, b.dm.fault[static_cast<size_t>(sp)][static_cast<size_t>(l)]);
        }
  }
  b.dir = harness::write(w, "datamem_" + name);
  return b;
}

// ---- The array model ----

struct Model {
  std::array<std::array<uint32_t, 128>, kSpaces> mem{};
  enum class Tag { None, Gmem, Gw, Mg, Ms, Other } tag = Tag::None;
  int n = 0;  // values since the tag
  uint32_t addr = 0;
  streams::ValueReader reader;
  int writes[kSpaces] = {}, ctaClears = 0, crossing = 0;
  int64_t position = -1, wordAt = 0;

  void step(int64_t id) {
    ++position;
    if (id >= trace::kVocabSize) return;  // a probe token
    const Token t = static_cast<Token>(id);
    const Family f = trace::familyOf(t);
    uint32_t v = 0;
    if (reader.step(t, v)) {
      ++n;
      const bool word = n % 2 == 1 && n <= 2 * kLanes, value = n % 2 == 0 && n <= 2 * kLanes;
      if (tag == Tag::Gmem || ((tag == Tag::Mg || tag == Tag::Ms) && word)) {
        addr = v & 127;
        wordAt = position;
      } else if (tag == Tag::Gw || ((tag == Tag::Mg || tag == Tag::Ms) && value)) {
        const int sp = tag == Tag::Ms ? 1 : 0;
        mem[static_cast<size_t>(sp)][addr] = v;
        ++writes[sp];
        crossing += wordAt / 64 != position / 64 ? 1 : 0;
      }
      return;
    }
    if (f == Family::C || f == Family::T) return;
    n = 0;
    tag = f == Family::Gmem ? Tag::Gmem
          : f == Family::Gw ? Tag::Gw
          : f == Family::Mg ? Tag::Mg
          : f == Family::Ms ? Tag::Ms
                            : Tag::Other;
    if (f == Family::Cta) {
      mem[1] = {};  // shared memory is zeroed at every CTA start
      ++ctaClears;
    }
  }
  std::vector<bool> read(const Request& q, const bool (&spaces)[kSpaces]) const {
    std::vector<bool> bits;
    for (int sp = 0; sp < kSpaces; ++sp) {
      if (!spaces[sp]) continue;
      for (int l = 0; l < kLanes; ++l) {
        const Address& a = q.a[static_cast<size_t>(sp)][static_cast<size_t>(l)];
        const uint32_t v = mem[static_cast<size_t>(sp)][static_cast<size_t>(a.word)];
        for (int b = 0; b < 32; ++b) bits.push_back((v >> b) & 1);
        bits.push_back(a.high || a.word >= kWords);
      }
    }
    return bits;
  }
};

std::vector<int64_t> withProbes(const std::vector<Token>& trace, uint32_t seed, double rate) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out;
  for (size_t i = 0; i < trace.size(); ++i) {
    const bool afterC = i > 0 && trace::familyOf(trace[i - 1]) == Family::C;
    if (!afterC && static_cast<double>(rng() % 1000) < rate * 1000)
      out.push_back(trace::kVocabSize + static_cast<int>(rng() % kProbes));
    out.push_back(trace[i]);
  }
  return out;
}

struct Expect {
  std::vector<std::vector<bool>> bits;
  int writes[kSpaces] = {}, ctaClears = 0, probes = 0, faultReads = 0, nonzeroReads = 0,
      crossing = 0;
};

Expect expect(const std::vector<int64_t>& tokens, const bool (&spaces)[kSpaces]) {
  Model m;
  Expect e;
  for (int64_t id : tokens) {
    m.step(id);
    const bool probe = id >= trace::kVocabSize;
    e.probes += probe ? 1 : 0;
    const Request q = probe ? probeRequest(static_cast<int>(id - trace::kVocabSize)) : padRequest();
    e.bits.push_back(m.read(q, spaces));
    if (probe) {
      for (int sp = 0; sp < kSpaces; ++sp)
        for (int l = 0; l < kLanes; ++l) {
          const Address& a = q.a[static_cast<size_t>(sp)][static_cast<size_t>(l)];
          e.faultReads += spaces[sp] && (a.high || a.word >= kWords) ? 1 : 0;
          e.nonzeroReads +=
              spaces[sp] && m.mem[static_cast<size_t>(sp)][static_cast<size_t>(a.word)] != 0 ? 1 : 0;
        }
    }
  }
  e.writes[0] = m.writes[0];
  e.writes[1] = m.writes[1];
  e.ctaClears = m.ctaClears;
  e.crossing = m.crossing;
  return e;
}

struct Spaces {
  bool s[kSpaces] = {true, true};
};

harness::SignCheck runAndCheck(const Bench& b, const std::vector<int64_t>& tokens,
                               ComputeDtype dtype, Path path, const Spaces& sp = {}) {
  harness::SignCheck c;
  auto dec = harness::load(b.dir, dtype);
  if (!dec) return c;
  const int logits = (sp.s[0] ? 1 : 0) * kLanes * kPerLane + (sp.s[1] ? 1 : 0) * kLanes * kPerLane;
  const auto rows = harness::run(*dec, tokens, path, logits);
  const Expect e = expect(tokens, sp.s);
  EXPECT_EQ(rows.size(), tokens.size());
  for (size_t p = 0; p < rows.size() && p < e.bits.size(); ++p)
    harness::checkBits(c, rows[p], e.bits[p], 1.0, "position " + std::to_string(p));
  return c;
}

std::vector<int64_t> prefix(const std::vector<int64_t>& t, size_t n) {
  return {t.begin(), t.begin() + static_cast<long>(std::min(n, t.size()))};
}

const char* dtypeName(ComputeDtype d) { return d == ComputeDtype::F32 ? "fp32" : "bf16"; }

std::string describe(const Expect& e, size_t tokens) {
  return std::to_string(tokens) + " tokens, " + std::to_string(e.writes[0]) + " global and " +
         std::to_string(e.writes[1]) + " shared word writes (" + std::to_string(e.crossing) +
         " with the word in another chunk than the value), " + std::to_string(e.ctaClears) +
         " CTA clears, " + std::to_string(e.probes) + " probe positions, " +
         std::to_string(e.nonzeroReads) + " lane reads of a nonzero word, " +
         std::to_string(e.faultReads) + " faulting lane reads";
}

void runMatrix(const Bench& b, const std::vector<int64_t>& tokens, const std::string& what) {
  const Spaces sp;
  std::cout << what << ": " << describe(expect(tokens, sp.s), tokens.size()) << "\n";
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const bool f32 = dtype == ComputeDtype::F32;
      // bf16 matmuls are ~20× slower here (a bf16 decode token ≈ 0.75 s at load 14): shorter
      // prefixes per commit. Every per-commit prompt still crosses the 64-token chunk boundary
      // (bf16 prefill 100; mixed: a prompt of n/2 ≥ 65, then 40 cached, then one by one).
      const size_t n = path == Path::Prefill ? (f32 ? tokens.size() : harness::inputs(100, 1000))
                       : path == Path::Mixed ? harness::inputs(f32 ? 160 : 132, f32 ? 1000 : 600)
                                             : harness::inputs(f32 ? 72 : 24, f32 ? 1000 : 300);
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

TEST(DataMemory, HandMadeRecordsReadExactlyOnEveryPath) {
  const Bench b = build("hand");
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens =
      withProbes(streams::handMade(7, harness::inputs(80, 250), 6), 11, 0.3);
  const Expect e = expect(tokens, Spaces{}.s);
  ASSERT_GT(tokens.size(), 5u * 64);
  ASSERT_GT(e.writes[0], 60);
  ASSERT_GT(e.writes[1], 30);
  ASSERT_GT(e.ctaClears, 2);
  ASSERT_GT(e.crossing, 5);
  ASSERT_GT(e.faultReads, 20);
  runMatrix(b, tokens, "hand-made records");
}

TEST(DataMemory, RealRunsOfRandomProgramsReadExactlyOnEveryPath) {
  const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  std::vector<int64_t> tokens;
  int seeds = 0;
  const size_t total = static_cast<size_t>(harness::inputs(1400, 4000));
  for (uint64_t seed = 1; tokens.size() < total; ++seed) {
    const std::vector<Token> t = streams::realRun(seed, seed == 1 ? 700 : 300, seed == 1);
    ASSERT_FALSE(t.empty());
    const std::vector<int64_t> one = withProbes(t, static_cast<uint32_t>(seed), 0.25);
    tokens.insert(tokens.end(), one.begin(), one.end());
    tokens.push_back(trace::single(Family::Cta));
    ++seeds;
  }
  const Expect e = expect(tokens, Spaces{}.s);
  std::cout << seeds << " programs\n";
  ASSERT_GT(e.writes[0] + e.writes[1], 20);
  runMatrix(b, tokens, "real runs");
}

TEST(DataMemory, EveryDimIsExactlyPlusMinusUnitAtEveryLayerInput) {
  const std::vector<int64_t> tokens =
      prefix(withProbes(streams::handMade(7, 80, 6), 11, 0.3), 300);
  struct Stage {
    int layer;
    bool withMlp;
  };
  std::vector<Stage> stages = {{-1, true}};
  for (int l = 0; l < 5; ++l) stages.push_back({l, false}), stages.push_back({l, true});
  for (ComputeDtype dtype : harness::kDtypes)
    for (const Stage& st : stages) {
      if (dtype == ComputeDtype::BF16 && st.layer != 4) continue;
      Options o;
      o.stageLayer = st.layer;
      o.stageWithMlp = st.withMlp;
      const Bench b = build("stage", o);
      auto dec = harness::load(b.dir, dtype);
      ASSERT_TRUE(dec);
      const size_t n = dtype == ComputeDtype::F32 ? tokens.size() : 100;
      const auto rows = harness::run(*dec, prefix(tokens, n), Path::Prefill, kHidden);
      int64_t off = 0, dims = 0;
      std::string first;
      for (size_t p = 0; p < rows.size(); ++p)
        for (int d = 0; d < kHidden; ++d) {
          if (d >= b.dm.quiet.offset && d < b.dm.quiet.offset + b.dm.quiet.dims) continue;
          const float want = d == b.dm.heavy.at(0) ? 2.0f : 1.0f;
          ++dims;
          if (std::fabs(rows[p][static_cast<size_t>(d)]) != want) {
            if (first.empty())
              first = "position " + std::to_string(p) + " dim " + std::to_string(d) + ": " +
                      std::to_string(rows[p][static_cast<size_t>(d)]);
            ++off;
          }
        }
      std::cout << dtypeName(dtype) << " after layer " << st.layer
                << (st.withMlp ? " (with its MLP)" : " (attention only)") << ": " << dims
                << " dims, " << off << " off ±1\n";
      EXPECT_EQ(off, 0) << "layer " << st.layer << " " << st.withMlp << ": " << first;
    }
}

harness::SignCheck twinRun(DataMemoryTwin twin, const std::string& name) {
  Options o;
  o.twin = twin;
  const Bench b = build(name, o);
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, 80, 6), 11, 0.3);
  return runAndCheck(b, tokens, ComputeDtype::F32, Path::Prefill);
}

TEST(DataMemoryTwin, PairShiftWritesTheWrongWords) {
  const harness::SignCheck c = twinRun(DataMemoryTwin::PairShift, "pairshift");
  std::cout << "pair rank shifted: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 1000);
}

TEST(DataMemoryTwin, NoCtaClearLeavesSharedWordsOfTheLastCta) {
  const harness::SignCheck c = twinRun(DataMemoryTwin::NoCtaClear, "nocta");
  std::cout << "no CTA clear: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 100);
}

// Key head dim 128 (the `2b` shape), global memory alone: 4-row cells (ReadHeight::Exact, 32
// cells per head, 4 heads per port) are exact in fp32 and bf16 on every path; one-row cells (1
// head per port, the twin) keep every sign but fp32 reads are ulps off.
TEST(DataMemory, KeyHeadDim128IsExactWithFourRowCells) {
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, 80, 6), 11, 0.3);
  Spaces global;
  global.s[1] = false;
  Options o;
  o.keyHeadDim = 128;
  o.read = ReadHeight::Exact;
  o.shared = false;
  const Bench b = build("dk128", o);
  ASSERT_FALSE(b.dir.empty());
  EXPECT_EQ(b.dm.banks, 4);
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const bool f32 = dtype == ComputeDtype::F32;
      // Decode (one forward per token, the cost) runs a shorter prefix per commit; the mixed path
      // keeps its prompt (over one chunk), continuation and one-by-one tail. QGPU_CIRCUIT_FULL:
      // 110 / 80 decoded.
      const size_t n = path == Path::Prefill ? (f32 ? tokens.size() : harness::inputs(100, 150))
                       : path == Path::Decode ? harness::inputs(f32 ? 64 : 24, f32 ? 110 : 80)
                       : f32                  ? 140
                                              : 132;
      const harness::SignCheck c = runAndCheck(b, prefix(tokens, n), dtype, path, global);
      std::cout << "key head dim 128, 4-row cells, " << dtypeName(dtype) << " "
                << harness::pathName(path) << " (" << std::min(n, tokens.size())
                << " tokens): " << c.summary() << "\n";
      EXPECT_TRUE(c.ok()) << c.summary();
    }
  o.read = ReadHeight::Nominal;
  o.heads = 8;
  const Bench nominal = build("dk128n", o);
  EXPECT_EQ(nominal.dm.banks, 1);
  const harness::SignCheck c = runAndCheck(nominal, tokens, ComputeDtype::F32, Path::Prefill, global);
  std::cout << "key head dim 128, one-row cells (twin), fp32 prefill: " << c.summary() << "\n";
  EXPECT_EQ(c.wrongSign, 0);
  EXPECT_GT(c.inexact, 0);
}

// The read the leg builds (DataMemorySpec's default): one-row cells with the norm rail (memory.h
// "Key head dim"), one head per port at dk 128, exact in fp32 and bf16 where the twin above is not.
TEST(DataMemory, KeyHeadDim128IsExactWithOneRowCellsAndTheNormRail) {
  const std::vector<int64_t> tokens = withProbes(streams::handMade(7, 80, 6), 11, 0.3);
  Spaces global;
  global.s[1] = false;
  Options o;
  o.keyHeadDim = 128;
  o.read = ReadHeight::NormRail;
  o.shared = false;
  o.heads = 8;
  const Bench b = build("dk128rail", o);
  ASSERT_FALSE(b.dir.empty());
  EXPECT_EQ(b.dm.banks, 1);
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : {Path::Prefill, Path::Mixed}) {
      const harness::SignCheck c = runAndCheck(b, tokens, dtype, path, global);
      std::cout << "key head dim 128, one-row cells with the norm rail, " << dtypeName(dtype) << " "
                << harness::pathName(path) << ": " << c.summary() << "\n";
      EXPECT_TRUE(c.ok()) << c.summary();
      EXPECT_EQ(c.inexact, 0);
    }
}

}  // namespace
}  // namespace qgpu::circuit
