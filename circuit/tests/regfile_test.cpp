// qgpu/circuit/tests/regfile_test.cpp — the committed register file (circuit/regfile.h) run
// through model/'s real decoder (circuit/tests/harness.h): four standard linear_attention layers
// over the trace vocabulary's embedding, fp32 and bf16, the chunked prefill (many 64-token
// chunks), the recurrent decode and the mixed path.
//
// What it pins down: at every position of token sequences written by the trace grammar — real
// runs of random machine programs (gen/program_gen.h, run by the interpreter, prompt + run as
// oracle/trace.h encodes them) and hand-made records with random values and random masks
// (divergent, 1–4 active lanes; WR, WU, WP, MG, MS, NOP; CTA starts mid-sequence) — all three
// ports' operand fields (3 ports × 4 lanes × 32 bits) are exactly ±1 at the probe and equal to a
// plain array model of the register file (regs[w][r][lane], written by this test from the record
// grammar of docs/trace.md: at the T of the k-th value of WR(r) the k-th set bit of the WM mask,
// at the T of WU(r)'s value every active lane, all zero at CTA), read after the position's write;
// r0 and every unwritten register read 0.
//
// The read request: the test vocabulary has, after the trace's kVocabSize rows, kProbes **probe
// tokens** (not trace tokens: no family, not a chunk) whose embedding holds a read key per port
// (register, warp); they are inserted into the sequences wherever a value is not interrupted (never
// after a C), so the assembler, the counter and the latches see the trace unchanged. On trace
// tokens the read-key fields hold the layout's +u pads, i.e. every trace position reads (r15, w3)
// on every port — also checked. In the pipeline the key comes from the ROM fetch and the EXEC
// latch instead (docs/circuit.md §4.1 L2).
//
// Failing twins: the lane rank counted with the lane's own mask bit (off by one) and the heads'
// reset left unconnected (stale values after a CTA) must give wrong operand bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <iostream>
#include <random>

#include "circuit/regfile.h"
#include "circuit/tests/harness.h"
#include "circuit/tokens.h"
#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 576;
constexpr int kPorts = 3;
constexpr int kLanes = 4;
constexpr int kProbes = 64;
constexpr int kProbeLogits = kPorts * kLanes * 32;
// Enough logits for the operand probes, or for every residual dim (the layer-input check).
constexpr int64_t kVocab = std::max<int64_t>({trace::kVocabSize + kProbes, kProbeLogits, kHidden});
constexpr float kUnit = 16;

// A read request: per port (register, warp).
struct Request {
  std::array<int, kPorts> reg{}, warp{};
};
// Trace tokens' read keys are +u pads: every bit 1.
constexpr Request kPadRequest = {{15, 15, 15}, {3, 3, 3}};

Request probeRequest(int i) {  // probe i: port 0 covers every (w, r) over the 64 probes
  Request q;
  q.reg = {i / 4, (i / 4 * 5 + 3) % 16, (i / 4 * 11 + 7) % 16};
  q.warp = {i % 4, (i + 1) % 4, (i / 16 + 2) % 4};
  return q;
}

model::Qwen35Config config(int keyHeadDim) {
  model::Qwen35Config c = harness::config(kHidden, 4, 512, kVocab);
  c.linearNumKeyHeads = c.linearNumValueHeads = 12;
  c.linearKeyHeadDim = keyHeadDim;  // 64: every head-written bit exact in fp32 (docs §9)
  return c;
}

struct Bench {
  std::string dir;
  RegisterFile rf;
};

// A probe of layer inputs: every dim through the lm_head, the layers after `layer` silenced
// (harness::silenceAfter; layer −1: the embedding).
struct Stage {
  int layer = 0;
  bool withMlp = true;
};

Bench build(const std::string& name, RegisterFileTwin twin = RegisterFileTwin::None,
            int keyHeadDim = 64, const Stage* stage = nullptr) {
  CircuitWeights w(config(keyHeadDim));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  RegisterFileSpec s;
  s.tokens = tokens;
  s.ports = kPorts;
  s.twin = twin;
  for (int p = 0; p < kPorts; ++p) s.readKey.push_back(alloc.take("key", 6).value());
  auto rf = buildRegisterFile(w, alloc, s);
  EXPECT_TRUE(rf.ok()) << rf.error().message;
  Bench b;
  if (!rf.ok()) return b;
  b.rf = rf.value();
  // Probe tokens: the full layout with no family, index 0, not a chunk, and their read keys.
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int i = 0; i < kProbes; ++i) {
    const int64_t row = trace::kVocabSize + i;
    harness::fillRow(w, row, kUnit);
    for (const Field& f : {tokens.family, tokens.index, tokens.chunk, tokens.isChunk,
                           tokens.isTerminal})
      harness::setSigns(w, row, f, 0, kUnit);
    for (int q = 0; q < b.rf.quiet.dims; ++q) EXPECT_TRUE(w.set(e, row, b.rf.quiet.at(q), 0).ok());
    EXPECT_TRUE(w.set(e, row, b.rf.heavy.at(0), 2 * kUnit).ok());
    const Request r = probeRequest(i);
    for (int p = 0; p < kPorts; ++p)
      harness::setSigns(w, row, s.readKey[static_cast<size_t>(p)],
                        static_cast<uint64_t>(r.reg[static_cast<size_t>(p)] |
                                              r.warp[static_cast<size_t>(p)] << 4),
                        kUnit);
  }
  if (stage) {
    harness::silenceAfter(w, stage->layer, stage->withMlp);
    harness::probe(w, 0, Field{"all", 0, kHidden});
  } else {
    for (int p = 0; p < kPorts; ++p)
      for (int l = 0; l < kLanes; ++l)
        harness::probe(w, (p * kLanes + l) * 32,
                       b.rf.operand[static_cast<size_t>(p)][static_cast<size_t>(l)]);
  }
  b.dir = harness::write(w, "regfile_" + name);
  return b;
}

// ---- Sequences ----

uint32_t randomValue(std::mt19937& rng) {
  static const uint32_t kEdge[] = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u,
                                   0xfffffff0u, 0xaaaaaaaau, 0x55555555u};
  if (rng() % 4 == 0) return kEdge[rng() % std::size(kEdge)];
  const int bits = static_cast<int>(rng() % 32) + 1;  // every value length 1..7
  uint32_t v = static_cast<uint32_t>(rng()) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
  return rng() % 2 ? ~v : v;
}

// Random records in the trace grammar: steps of random warps and masks (every mask 1..15), WR
// and WU of random registers, WP / MG / MS / NOP in between, CTA starts, a few prompt-like values
// first (two GMEM / GW pairs: values outside any record).
std::vector<Token> handMade(uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  std::vector<Token> t;
  auto value = [&](uint32_t v) { trace::appendValue(t, v); };
  for (int i = 0; i < 2; ++i) {
    t.push_back(trace::single(Family::Gmem));
    value(rng() % 126);
    t.push_back(trace::single(Family::Gw));
    value(randomValue(rng));
  }
  t.push_back(trace::single(Family::Run));
  for (int s = 0; s < steps; ++s) {
    // A CTA start early (so that even the short decode prefixes hold one), then at random.
    if (s == 2 || (s > 0 && rng() % 12 == 0)) t.push_back(trace::single(Family::Cta));
    const int w = static_cast<int>(rng() % 4), m = static_cast<int>(rng() % 15) + 1;
    t.push_back(trace::ex(static_cast<int>(rng() % 32)));
    t.push_back(trace::wm(w, m));
    const int records = 1 + static_cast<int>(rng() % 4);
    for (int r = 0; r < records; ++r) {
      const uint32_t kind = rng() % 100;
      const int reg = 1 + static_cast<int>(rng() % 15);
      if (kind < 45) {
        t.push_back(trace::wr(reg));
        for (int l = 0; l < std::popcount(static_cast<unsigned>(m)); ++l) value(randomValue(rng));
      } else if (kind < 70) {
        t.push_back(trace::wu(reg));
        value(randomValue(rng));
      } else if (kind < 80) {
        t.push_back(trace::wp(static_cast<int>(rng() % 8)));
        value(static_cast<uint32_t>(rng() % 16) & static_cast<uint32_t>(m));
      } else if (kind < 95) {
        int e = static_cast<int>(rng() % 16) & m;
        if (e == 0) e = m;
        t.push_back(kind < 88 ? trace::mg(e) : trace::ms(e));
        for (int l = 0; l < std::popcount(static_cast<unsigned>(e)); ++l) {
          value(rng() % 126);
          value(randomValue(rng));
        }
      } else {
        t.push_back(trace::single(Family::Nop));
      }
    }
  }
  t.push_back(trace::single(Family::End));
  return t;
}

// The run of a random program (4 warps, divergence, 1–3 CTAs), cut after `maxTokens`; with
// `prompt`, its prompt first (values outside any record, which must write nothing).
std::vector<Token> realRun(uint64_t seed, size_t maxTokens, bool prompt) {
  gen::Policy p;
  p.minBlockX = 9;  // at least 3 warps
  p.maxBlockX = 16;
  p.maxGrid = 3;
  p.maxRegions = 4;
  p.divergentBarrierProb = 0;
  p.outOfRangeProb = 0;
  auto c = gen::generateProgram(p, seed);
  EXPECT_TRUE(c.ok()) << c.error().message;
  if (!c.ok()) return {};
  oracle::RunOptions o;
  o.maxSteps = c->stepBound;
  auto r = oracle::run(c->program, c->launch, o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return {};
  std::vector<Token> t;
  if (prompt) t = trace::encodePrompt(c->program, c->launch);
  t.insert(t.end(), r->trace.begin(), r->trace.end());
  if (t.size() > maxTokens) t.resize(maxTokens);
  return t;
}

// ---- The array model: what every port must read at every position ----

struct Model {
  std::array<std::array<std::array<uint32_t, kLanes>, 16>, 4> regs{};
  int warp = 0, mask = 0;
  enum class Rec { None, Wr, Wu, Other } rec = Rec::None;
  int reg = 0, rank = 0;
  int64_t acc = 0;
  bool inValue = false;
  int writes = 0, ctaResets = 0;
  int lastReg = 0, lastWarp = 0;  // the register written last
  int64_t position = -1, tagAt = 0;
  int crossing = 0;  // register values whose T is in another 64-token chunk than their tag

  void step(int64_t id) {
    ++position;
    if (id >= trace::kVocabSize) return;  // a probe token
    const Token t = static_cast<Token>(id);
    const Family f = trace::familyOf(t);
    const int i = trace::indexOf(t);
    switch (f) {
      case Family::Cta:
        regs = {};
        ++ctaResets;
        return;
      case Family::Wm:
        warp = i / trace::kLaneMasks;
        mask = i % trace::kLaneMasks + 1;
        return;
      case Family::Wr:
      case Family::Wu:
        rec = f == Family::Wr ? Rec::Wr : Rec::Wu;
        tagAt = position;
        reg = i + 1;
        rank = 0;
        return;
      case Family::Wp:
      case Family::Mg:
      case Family::Ms:
      case Family::Nop:
        rec = Rec::Other;
        return;
      case Family::C:
      case Family::T: {
        // docs/trace.md "Values": the first chunk signed, then v = 32·v + chunk.
        const int d = i & 31;
        acc = inValue ? acc * 32 + d : (d >= 16 ? d - 32 : d);
        inValue = f == Family::C;
        if (f == Family::T) value(static_cast<uint32_t>(acc));
        return;
      }
      default:
        return;
    }
  }
  void value(uint32_t v) {
    if ((rec == Rec::Wr || rec == Rec::Wu) && rank < std::popcount(static_cast<unsigned>(mask))) {
      lastReg = reg;
      lastWarp = warp;
      crossing += tagAt / 64 != position / 64 ? 1 : 0;
    }
    if (rec == Rec::Wr) {
      int seen = 0;
      for (int l = 0; l < kLanes; ++l)
        if ((mask >> l) & 1 && seen++ == rank) {
          regs[static_cast<size_t>(warp)][static_cast<size_t>(reg)][static_cast<size_t>(l)] = v;
          ++writes;
        }
    } else if (rec == Rec::Wu && rank == 0) {
      for (int l = 0; l < kLanes; ++l)
        if ((mask >> l) & 1) {
          regs[static_cast<size_t>(warp)][static_cast<size_t>(reg)][static_cast<size_t>(l)] = v;
          ++writes;
        }
    }
    ++rank;
  }
  std::vector<bool> read(const Request& q) const {
    std::vector<bool> bits;
    for (int p = 0; p < kPorts; ++p)
      for (int l = 0; l < kLanes; ++l) {
        const uint32_t v =
            q.reg[static_cast<size_t>(p)] == 0
                ? 0u
                : regs[static_cast<size_t>(q.warp[static_cast<size_t>(p)])]
                      [static_cast<size_t>(q.reg[static_cast<size_t>(p)])][static_cast<size_t>(l)];
        for (int b = 0; b < 32; ++b) bits.push_back((v >> b) & 1);
      }
    return bits;
  }
};

// Inserts probe tokens where no value is interrupted (never right after a C); half of them read
// the register written last (port 0 of probe 4r + w reads (r, w)), the others a random one.
std::vector<int64_t> withProbes(const std::vector<Token>& trace, uint32_t seed, double rate) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out;
  Model m;
  for (size_t i = 0; i < trace.size(); ++i) {
    const bool afterC = i > 0 && trace::familyOf(trace[i - 1]) == Family::C;
    if (!afterC && static_cast<double>(rng() % 1000) < rate * 1000) {
      const int probe = rng() % 2 && m.writes > 0 ? 4 * m.lastReg + m.lastWarp
                                                  : static_cast<int>(rng() % kProbes);
      out.push_back(trace::kVocabSize + probe);
    }
    out.push_back(trace[i]);
    m.step(trace[i]);
  }
  return out;
}

struct Expect {
  std::vector<std::vector<bool>> bits;  // per position
  int writes = 0, ctaResets = 0, probes = 0, nonzeroReads = 0, crossing = 0;
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
  e.ctaResets = m.ctaResets;
  e.crossing = m.crossing;
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

// fp32 and bf16 × prefill / decode / mixed; the sizes per path and dtype (per commit / full).
void runMatrix(const Bench& b, const std::vector<int64_t>& tokens, const std::string& what) {
  const Expect e = expect(tokens);
  std::cout << what << ": " << tokens.size() << " tokens, " << e.writes << " lane writes, "
            << e.ctaResets << " CTA resets, " << e.probes << " probe positions, "
            << e.nonzeroReads << " positions reading a nonzero value, " << e.crossing
            << " register values in another chunk than their tag\n";
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const bool f32 = dtype == ComputeDtype::F32;
      // Per commit: fp32 prefill the whole sequence, the other runs a prefix (bf16 matmuls are
      // ~20× slower here, decode runs one forward per token); QGPU_CIRCUIT_FULL=1: longer ones.
      const size_t n = path == Path::Prefill ? (f32 ? tokens.size() : harness::inputs(200, 1000))
                       : path == Path::Mixed   ? harness::inputs(f32 ? 180 : 150, f32 ? 1000 : 600)
                                               : harness::inputs(f32 ? 100 : 64, f32 ? 1000 : 300);
      const std::vector<int64_t> t = prefix(tokens, n);
      const auto start = std::chrono::steady_clock::now();
      const harness::SignCheck c = runAndCheck(b, t, dtype, path);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const Expect pe = expect(t);
      std::cout << "  " << dtypeName(dtype) << " " << harness::pathName(path) << " (" << t.size()
                << " tokens, " << pe.writes << " lane writes, " << pe.ctaResets << " CTA, " << s
                << " s): " << c.summary() << "\n";
      EXPECT_TRUE(c.ok()) << what << " " << dtypeName(dtype) << " " << harness::pathName(path)
                          << ": " << c.summary();
    }
}

TEST(RegisterFile, HandMadeRecordsWriteTheRightLanesAndReadExactlyOnEveryPath) {
  const Bench b = build("hand");
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens =
      withProbes(handMade(7, harness::inputs(70, 200)), 11, 0.3);
  ASSERT_GT(tokens.size(), 5u * 64);  // many chunks
  const Expect e = expect(tokens);
  ASSERT_GT(e.ctaResets, 2);
  ASSERT_GT(e.writes, 200);
  ASSERT_GT(e.crossing, 5);
  runMatrix(b, tokens, "hand-made records");
}

TEST(RegisterFile, RealRunsOfRandomProgramsReadExactlyOnEveryPath) {
  const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  // Runs follow each other as one sequence, a CTA token between them (it resets the registers);
  // the last one comes with its prompt.
  std::vector<int64_t> tokens;
  int seeds = 0;
  const size_t total = static_cast<size_t>(harness::inputs(1400, 4000));
  for (uint64_t seed = 1; tokens.size() < total; ++seed) {
    const bool last = tokens.size() + 700 >= total;
    const std::vector<Token> t = realRun(seed, last ? 900 : 400, last);
    ASSERT_FALSE(t.empty());
    const std::vector<int64_t> one = withProbes(t, static_cast<uint32_t>(seed), 0.25);
    tokens.insert(tokens.end(), one.begin(), one.end());
    tokens.push_back(trace::single(Family::Cta));
    ++seeds;
  }
  const Expect e = expect(tokens);
  std::cout << seeds << " programs\n";
  ASSERT_GT(e.writes, 200);
  runMatrix(b, tokens, "real runs");
}

// The full layout at every layer and MLP input: every dim of every position exactly ±1 after the
// final norm (the counter's quiet dims excepted, 0 or its tiny level; the heavy pad ±2), so Σx² and
// λ = 1 are the same at every depth, whatever the reads return (written, empty, r0).
TEST(RegisterFile, EveryDimIsExactlyPlusMinusUnitAtEveryLayerInput) {
  const std::vector<int64_t> tokens = prefix(withProbes(handMade(7, 70), 11, 0.3), 300);
  std::vector<Stage> stages = {{-1, true}};
  for (int l = 0; l < 4; ++l) stages.push_back({l, false}), stages.push_back({l, true});
  for (ComputeDtype dtype : harness::kDtypes)
    for (const Stage& st : stages) {
      if (dtype == ComputeDtype::BF16 && st.layer != 3) continue;  // bf16: the output only
      const Bench b = build("stage", RegisterFileTwin::None, 64, &st);
      auto dec = harness::load(b.dir, dtype);
      ASSERT_TRUE(dec);
      const size_t n = dtype == ComputeDtype::F32 ? tokens.size() : 100;
      const auto rows = harness::run(*dec, prefix(tokens, n), Path::Prefill, kHidden);
      int64_t off = 0, dims = 0;
      std::string first;
      for (size_t p = 0; p < rows.size(); ++p)
        for (int d = 0; d < kHidden; ++d) {
          if (d >= b.rf.quiet.offset && d < b.rf.quiet.offset + b.rf.quiet.dims) continue;
          const float want = d == b.rf.heavy.at(0) ? 2.0f : 1.0f;
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

harness::SignCheck twinRun(RegisterFileTwin twin, const std::string& name) {
  const Bench b = build(name, twin);
  const std::vector<int64_t> tokens = withProbes(handMade(7, 70), 11, 0.3);
  return runAndCheck(b, tokens, ComputeDtype::F32, Path::Prefill);
}

TEST(RegisterFileTwin, LaneRankOffByOneWritesWrongLanes) {
  const harness::SignCheck c = twinRun(RegisterFileTwin::RankOffByOne, "rank");
  std::cout << "rank off by one: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 1000);
}

TEST(RegisterFileTwin, NoResetLeavesStaleValuesAfterCta) {
  const harness::SignCheck c = twinRun(RegisterFileTwin::NoReset, "noreset");
  std::cout << "no reset: " << c.summary() << "\n";
  EXPECT_GT(c.wrongSign, 100);
}

// Key head dim 128 (the `2b` shape): the query's 1/√128 is no power of two; the register heads'
// norm rail (memory.h "Key head dim") makes every operand bit exactly ±u anyway.
harness::SignCheck dk128Run(RegisterFileTwin twin, const std::string& name) {
  const Bench b = build(name, twin, 128);
  const std::vector<int64_t> tokens = withProbes(handMade(7, 70), 11, 0.3);
  return runAndCheck(b, tokens, ComputeDtype::F32, Path::Prefill);
}

TEST(RegisterFile, WithKeyHeadDim128EveryBitIsExactThroughTheNormRail) {
  const harness::SignCheck c = dk128Run(RegisterFileTwin::None, "dk128");
  std::cout << "key head dim 128, fp32 prefill: " << c.summary() << "\n";
  EXPECT_EQ(c.wrongSign, 0);
  EXPECT_EQ(c.inexact, 0);
}

// The twin, the register file before the rail: one-row Nominal reads at dk 128 keep every sign
// but come back ulps off ±u (measured: 33,692 of 566,400 bits, 2 magnitudes within 6e-6) — the
// operand dims that put `2b`'s adder gates into R2's band (docs/circuit.md §9 "The norm rail").
TEST(RegisterFileTwin, WithoutTheNormRailBitsAreUlpsOffAtKeyHeadDim128) {
  const harness::SignCheck c = dk128Run(RegisterFileTwin::NominalRead, "dk128nominal");
  std::cout << "key head dim 128 without the rail, fp32 prefill: " << c.summary() << "\n";
  EXPECT_EQ(c.wrongSign, 0);
  EXPECT_GT(c.inexact, 0);
}

}  // namespace
}  // namespace qgpu::circuit
