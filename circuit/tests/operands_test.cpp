// qgpu/circuit/tests/operands_test.cpp — the operand select (circuit/operands.h) on the front end
// with its payload banks (circuit/frontend.h, payloadBanks), run through model/'s real decoder
// (circuit/tests/harness.h): five linear_attention layers driven by nothing but the trace tokens
// of real runs — the prompt oracle/trace.h's encodePrompt packs for a random machine program
// (gen/program_gen.h: immediates, special registers, 1–2 CTAs, several warps), then the run the
// interpreter writes — in fp32 and bf16, chunked prefill, recurrent decode and mixed.
//
// What it pins down, at every op position of every step (the positions come from the
// interpreter's own encoder, appendTrace, cut after each op's record, as frontend_test does):
// every operand word of every source k and lane l equals the value the interpreter reads
// (oracle/interpreter.cpp `src`): Reg the register as the interpreter had it before the op (an
// array model written from its OpEffects, cleared at each CTA start), Imm the program's
// immediate, Special tid.x = 4w + l, laneid l, warpid w, ntid.x = blockX, nctaid.x = gridX,
// ctaid.x = the step's CTA (StepEffects::cta), None (and the terminator position) 0; also the
// latched launch (gridX, blockX) and the CTA thermometer [c ≥ 1..15] = the step's CTA. Every
// probed logit of every position exactly ±1. Expected values come from the program, the launch
// and the interpreter, never from the stage.
//
// Failing twins: immediates read from the next source's payload slot; tid.x without the warp.
// Finding: key head dim 128 (the payload banks are one-row memories, docs/circuit.md §4.2): the
// operand words stay exact; L+3's 25 heads do not fit `2b`.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <iostream>

#include "circuit/frontend.h"
#include "circuit/operands.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/real_runs.h"
#include "circuit/tokens.h"
#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Token;

constexpr int kHidden = 1152;  // the front end and the select take 1,094 dims
constexpr int kLanes = 4;
constexpr int kSources = 3;
constexpr int kCtaThresholds = 15;

// Probe logits.
constexpr int kPGrid = 0, kPBlockX = 5, kPCta = 10, kPWord = kPCta + kCtaThresholds;
constexpr int kProbes = kPWord + kSources * kLanes * 32;
constexpr int64_t kVocab = 512;
static_assert(kVocab >= trace::kVocabSize && kVocab >= kProbes);

model::Qwen35Config config(int keyHeadDim) {
  model::Qwen35Config c = harness::config(kHidden, 5, 1024, kVocab);
  int heads = 0;
  for (int h : operandStageHeads(keyHeadDim)) heads = std::max(heads, h);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Bench {
  std::string dir;
  FrontEnd fe;
  Operands op;
};

Bench build(const std::string& name, OperandsTwin twin = OperandsTwin::None, int keyHeadDim = 64) {
  CircuitWeights w(config(keyHeadDim));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  FrontEndSpec s;
  s.tokens = tokens;
  s.payloadBanks = true;
  auto fe = buildFrontEnd(w, alloc, s);
  EXPECT_TRUE(fe.ok()) << fe.error().message;
  Bench b;
  if (!fe.ok()) return b;
  b.fe = fe.value();
  OperandsSpec os;
  os.tokens = tokens;
  os.twin = twin;
  auto op = buildOperands(w, alloc, b.fe, os);
  EXPECT_TRUE(op.ok()) << op.error().message;
  if (!op.ok()) return b;
  b.op = op.value();
  harness::probe(w, kPGrid, b.op.gridX);
  harness::probe(w, kPBlockX, b.op.blockX);
  harness::probe(w, kPCta, b.op.ctaAtLeast);
  for (int k = 0; k < kSources; ++k)
    for (int l = 0; l < kLanes; ++l)
      harness::probe(w, kPWord + (k * kLanes + l) * 32,
                     b.op.word[static_cast<size_t>(k)][static_cast<size_t>(l)]);
  b.dir = harness::write(w, "operands_" + name);
  return b;
}

// ---- Real runs and what each op position must hold ----

struct OpPosition {
  size_t pos = 0;
  int j = 0, cta = 0, warp = 0;
  std::array<machine::Operand, 3> src{};  // the op's sources (None at the terminator)
  std::array<std::array<uint32_t, kLanes>, kSources> word{};
};

struct Case {
  std::vector<int64_t> tokens;
  std::vector<OpPosition> ops;  // increasing positions
  size_t prompt = 0;
  uint32_t gridX = 0, blockX = 0;
  int ctas = 0;  // CTA starts after the first
};

// What a case's op positions read: so a test can say its cases reach every kind.
struct Reads {
  int imms = 0, specials = 0, ctaOne = 0;
  int tidUpperWarps = 0;  // tid.x reads by a warp w ≥ 1 (4w + l ≠ l)
  std::array<int, machine::kNumSpecials> perSpecial{};
  void add(const Reads& r) {
    imms += r.imms, specials += r.specials, ctaOne += r.ctaOne, tidUpperWarps += r.tidUpperWarps;
    for (size_t i = 0; i < perSpecial.size(); ++i) perSpecial[i] += r.perSpecial[i];
  }
};
Reads reads(const Case& c) {
  Reads r;
  for (const OpPosition& op : c.ops) {
    r.ctaOne += op.cta == 1;
    for (const machine::Operand& src : op.src) {
      r.imms += src.kind == machine::OperandKind::Imm;
      if (src.kind != machine::OperandKind::Special) continue;
      ++r.specials;
      ++r.perSpecial[static_cast<size_t>(src.special)];
      r.tidUpperWarps += src.special == machine::Special::TidX && op.warp >= 1;
    }
  }
  return r;
}

// The value lane l of warp w reads for special register `sp` (interpreter.cpp sets them so at
// each step; written out here from the definitions of oracle/machine.h's Special).
uint32_t specialValue(machine::Special sp, int w, int l, const machine::Launch& launch, int cta) {
  switch (sp) {
    case machine::Special::TidX: return static_cast<uint32_t>(w * kLanes + l);
    case machine::Special::NtidX: return launch.blockX;
    case machine::Special::CtaidX: return static_cast<uint32_t>(cta);
    case machine::Special::NctaidX: return launch.gridX;
    case machine::Special::LaneId: return static_cast<uint32_t>(l);
    case machine::Special::WarpId: return static_cast<uint32_t>(w);
  }
  return 0;
}

// The prompt and run of one random program (real_runs.h) with what each op position reads; empty
// when skipped (a run that does not finish). The continuation positions of two-record ops
// (atomics, multiplies) are not op positions: they are the front end's business (frontend_test).
// `small`: real_runs::policy's short prompts.
Case realCase(uint64_t seed, size_t maxTokens, bool small) {
  Case c;
  auto g = gen::generateProgram(real_runs::policy(small), seed);
  EXPECT_TRUE(g.ok()) << g.error().message;
  if (!g.ok()) return c;
  const machine::Program& prog = g->program;
  c.gridX = g->launch.gridX;
  c.blockX = g->launch.blockX;
  const real_runs::Run run = real_runs::run(prog, g->launch, g->stepBound);
  if (!run.finished) return c;
  c.prompt = run.prompt;
  c.ctas = run.ctas;
  for (const real_runs::Site& s : run.sites) {
    if (s.cont) continue;
    const machine::Block& blk = prog.blocks[static_cast<size_t>(s.block)];
    OpPosition op;
    op.pos = s.pos;
    op.j = s.k;
    op.cta = static_cast<int>(s.cta);
    op.warp = s.warp;
    if (!s.term) {
      op.src = blk.ops[static_cast<size_t>(s.k)].src;
      for (int k = 0; k < kSources; ++k) {
        const machine::Operand& src = op.src[static_cast<size_t>(k)];
        for (int l = 0; l < kLanes; ++l) {
          uint32_t v = 0;
          if (src.kind == machine::OperandKind::Reg) v = s.regs[src.reg][static_cast<size_t>(l)];
          if (src.kind == machine::OperandKind::Imm) v = src.imm;
          if (src.kind == machine::OperandKind::Special)
            v = specialValue(src.special, s.warp, l, g->launch, op.cta);
          op.word[static_cast<size_t>(k)][static_cast<size_t>(l)] = v;
        }
      }
    }
    c.ops.push_back(op);
  }
  std::vector<Token> t = run.tokens;
  if (t.size() > maxTokens) t.resize(maxTokens);
  while (!c.ops.empty() && c.ops.back().pos >= t.size()) c.ops.pop_back();
  c.tokens.assign(t.begin(), t.end());
  return c;
}

struct Checked {
  harness::SignCheck bits;
  harness::LayoutCheck layout;
  int opPositions = 0, ctaOnePositions = 0;
};

void checkCase(Checked& out, const Case& c, const std::vector<std::vector<float>>& rows) {
  EXPECT_EQ(rows.size(), c.tokens.size());
  size_t next = 0;
  for (size_t p = 0; p < rows.size(); ++p) {
    if (next >= c.ops.size() || c.ops[next].pos != p) continue;
    const OpPosition& op = c.ops[next++];
    ++out.opPositions;
    out.ctaOnePositions += op.cta == 1;
    std::vector<bool> want;
    auto put = [&](uint64_t v, int n) {
      for (int i = 0; i < n; ++i) want.push_back((v >> i) & 1);
    };
    put(c.gridX, 5);
    put(c.blockX, 5);
    for (int n = 1; n <= kCtaThresholds; ++n) want.push_back(op.cta >= n);
    for (int s = 0; s < kSources; ++s)
      for (int l = 0; l < kLanes; ++l) put(op.word[static_cast<size_t>(s)][static_cast<size_t>(l)], 32);
    harness::checkBits(out.bits, rows[p], want, 1.0,
                       "position " + std::to_string(p) + " (op " + std::to_string(op.j) + ")");
  }
  const harness::LayoutCheck l = harness::checkLayout(rows, 1.0f);
  out.layout.logits += l.logits;
  out.layout.offNominal += l.offNominal;
  out.layout.magnitudes.insert(l.magnitudes.begin(), l.magnitudes.end());
  if (out.layout.first.empty()) out.layout.first = l.first;
}

// Which programs a test takes (the first `count` usable ones by seed that pass).
enum class Want : uint8_t {
  Any,
  TidUpperWarps,  // reads tid.x in a warp w ≥ 1 (the tid twin's cases)
  SecondCta,      // has op positions in CTA 1
};

std::vector<Case> cases(int count, size_t maxTokens, bool small = false, Want want = Want::Any) {
  std::vector<Case> out;
  for (uint64_t seed = 1; static_cast<int>(out.size()) < count && seed < 200; ++seed) {
    Case c = realCase(seed, maxTokens, small);
    if (want == Want::TidUpperWarps && reads(c).tidUpperWarps == 0) continue;
    if (want == Want::SecondCta && reads(c).ctaOne == 0) continue;
    if (!c.tokens.empty() && !c.ops.empty()) out.push_back(std::move(c));
  }
  return out;
}

// The fp32 prefill set: the first programs, plus for each special register none of them reads the
// first program that reads it, one that reads tid.x in a warp w ≥ 1 and one that reaches CTA 1
// when none does (so every special, 4w + l rather than l alone, and ctaid.x = 1 are pinned).
std::vector<Case> prefillCases() {
  std::vector<Case> cs = cases(harness::inputs(2, 20), 2000);
  Reads r;
  for (const Case& c : cs) r.add(reads(c));
  for (int sp = 0; sp < machine::kNumSpecials; ++sp) {
    if (r.perSpecial[static_cast<size_t>(sp)] > 0) continue;
    for (uint64_t seed = 1; seed < 200; ++seed) {
      Case c = realCase(seed, 2000, false);
      const Reads cr = reads(c);
      if (c.ops.empty() || cr.perSpecial[static_cast<size_t>(sp)] == 0) continue;
      r.add(cr);
      cs.push_back(std::move(c));
      break;
    }
  }
  if (r.tidUpperWarps == 0)
    for (Case& c : cases(1, 2000, false, Want::TidUpperWarps)) cs.push_back(std::move(c));
  if (r.ctaOne == 0)
    for (Case& c : cases(1, 2000, false, Want::SecondCta)) cs.push_back(std::move(c));
  return cs;
}

Case prefix(const Case& c, size_t n) {
  Case p = c;
  if (p.tokens.size() > n) p.tokens.resize(n);
  while (!p.ops.empty() && p.ops.back().pos >= p.tokens.size()) p.ops.pop_back();
  return p;
}

const char* dtypeName(ComputeDtype d) { return d == ComputeDtype::F32 ? "fp32" : "bf16"; }

Checked runCases(const Bench& b, const std::vector<Case>& cs, ComputeDtype dtype, Path path) {
  Checked out;
  auto dec = harness::load(b.dir, dtype);
  if (!dec) return out;
  for (const Case& c : cs) checkCase(out, c, harness::run(*dec, c.tokens, path, kProbes));
  return out;
}

std::string describe(const std::vector<Case>& cs, const Checked& r, double s) {
  size_t tokens = 0, prompts = 0;
  int twoCta = 0;
  Reads rd;
  for (const Case& c : cs) {
    tokens += c.tokens.size(), prompts += c.prompt;
    twoCta += c.ctas > 0;
    rd.add(reads(c));
  }
  const int imms = rd.imms, specials = rd.specials;
  return std::to_string(cs.size()) + " programs (" + std::to_string(twoCta) + " with 2 CTAs), " +
         std::to_string(tokens) + " tokens (" + std::to_string(prompts) + " in prompts), " +
         std::to_string(r.opPositions) + " op positions (" + std::to_string(r.ctaOnePositions) +
         " in CTA 1), " + std::to_string(imms) + " immediate and " + std::to_string(specials) +
         " special reads at them, " + std::to_string(s) + " s: " + r.bits.summary() +
         "; layout " + r.layout.summary();
}

// The cases of one run of the matrix: fp32 prefill whole programs; the other paths a short
// program's prefix (its whole prompt and the first steps: decode runs one forward per token).
void runPath(ComputeDtype dtype, Path path) {
  static const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  const bool f32 = dtype == ComputeDtype::F32;
  std::vector<Case> cs;
  if (f32 && path == Path::Prefill) {
    cs = prefillCases();
  } else {
    const size_t extra = static_cast<size_t>(
        path == Path::Prefill ? harness::inputs(150, 600)
        : path == Path::Decode ? harness::inputs(f32 ? 60 : 25, 300)
                               : harness::inputs(f32 ? 100 : 50, 600));
    // The first short program whose prefix reads an immediate and a special and reaches CTA 1.
    for (uint64_t seed = 1; cs.empty() && seed < 200; ++seed) {
      const Case c = realCase(seed, 2000, true);
      if (c.ops.empty()) continue;
      const Case p = prefix(c, c.prompt + extra);
      const Reads r = reads(p);
      if (r.imms > 0 && r.specials > 0 && r.ctaOne > 0) cs.push_back(p);
    }
    ASSERT_EQ(cs.size(), 1u) << "no short program reads every kind";
  }
  const auto start = std::chrono::steady_clock::now();
  const Checked r = runCases(b, cs, dtype, path);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "heads per layer";
  for (int h : operandStageHeads(64)) std::cout << " " << h;
  std::cout << "; select units " << b.op.units[4] << "; " << dtypeName(dtype) << " "
            << harness::pathName(path) << ": " << describe(cs, r, s) << std::endl;
  EXPECT_TRUE(r.bits.ok()) << r.bits.summary();
  EXPECT_TRUE(r.layout.ok()) << r.layout.summary();
  EXPECT_GT(r.opPositions, 10);
}

TEST(Operands, RealRunsFp32Prefill) { runPath(ComputeDtype::F32, Path::Prefill); }
TEST(Operands, RealRunsFp32Decode) { runPath(ComputeDtype::F32, Path::Decode); }
TEST(Operands, RealRunsFp32Mixed) { runPath(ComputeDtype::F32, Path::Mixed); }
TEST(Operands, RealRunsBf16Prefill) { runPath(ComputeDtype::BF16, Path::Prefill); }
TEST(Operands, RealRunsBf16Decode) { runPath(ComputeDtype::BF16, Path::Decode); }
TEST(Operands, RealRunsBf16Mixed) { runPath(ComputeDtype::BF16, Path::Mixed); }

// The fp32 prefill cases must read immediates and every special register, tid.x in a warp ≥ 1,
// and reach a second CTA, or the matrix above would pin less than it says.
TEST(Operands, CasesReadImmediatesEverySpecialAndTwoCtas) {
  const std::vector<Case> cs = prefillCases();
  Reads r;
  for (const Case& c : cs) r.add(reads(c));
  const int imms = r.imms, specials = r.specials, ctaOne = r.ctaOne, tidUpper = r.tidUpperWarps;
  const std::array<int, machine::kNumSpecials>& per = r.perSpecial;
  std::cout << imms << " immediate, " << specials << " special reads (";
  for (int i = 0; i < machine::kNumSpecials; ++i)
    std::cout << (i ? ", " : "") << machine::specialName(static_cast<machine::Special>(i)) << " "
              << per[static_cast<size_t>(i)];
  std::cout << "; " << tidUpper << " tid.x in warps >= 1); " << ctaOne << " op positions in CTA 1"
            << std::endl;
  EXPECT_GT(imms, 20);
  EXPECT_GT(specials, 5);
  for (int i = 0; i < machine::kNumSpecials; ++i)
    EXPECT_GT(per[static_cast<size_t>(i)], 0) << machine::specialName(static_cast<machine::Special>(i));
  EXPECT_GT(tidUpper, 0);
  EXPECT_GT(ctaOne, 5);
}

TEST(OperandsTwin, ImmediateFromTheNextSlotIsWrong) {
  const Bench b = build("immslot", OperandsTwin::ImmFromNextSlot);
  ASSERT_FALSE(b.dir.empty());
  const Checked r = runCases(b, cases(1, 2000), ComputeDtype::F32, Path::Prefill);
  std::cout << "immediate from the next slot: " << r.bits.summary() << std::endl;
  EXPECT_GT(r.bits.wrongSign, 20);
}

TEST(OperandsTwin, TidWithoutTheWarpIsWrong) {
  const Bench b = build("tidwarp", OperandsTwin::TidWithoutWarp);
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(1, 2000, false, Want::TidUpperWarps);
  ASSERT_EQ(cs.size(), 1u);
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "tid.x without the warp (" << reads(cs[0]).tidUpperWarps << " reads in warps ≥ 1): "
            << r.bits.summary() << std::endl;
  EXPECT_GT(r.bits.wrongSign, 0);
}

// Finding (the `2b` shape has key head dim 128): the payload banks, like the ROM's other banks, and
// the register file are one-row memories whose reads are ulps off ±1 there (frontend_test's and
// regfile_test's finding). The select's ANDs decide on the sign of a payload bit and write exact
// ±u, but a register source passes the register file's read through, so the operand words are
// right in every sign and not bit-exact: 0 wrong, 180 of 49,080 bits inexact on these programs
// since trace v5's programs (the first build's two programs happened to be exact). Exact reads at
// `2b` are docs/circuit.md §8's decision (4-row cells). The budget: L+3 holds 6·4 + 1 = 25 heads
// at dk 128, over `2b`'s 16.
TEST(OperandsFinding, KeyHeadDim128) {
  const Bench b = build("dk128", OperandsTwin::None, 128);
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(1, 2000);
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "key head dim 128, fp32 prefill: " << describe(cs, r, 0) << std::endl;
  EXPECT_EQ(r.bits.wrongSign, 0) << r.bits.summary();
  EXPECT_EQ(operandStageHeads(128)[3], 25);
}

}  // namespace
}  // namespace qgpu::circuit
