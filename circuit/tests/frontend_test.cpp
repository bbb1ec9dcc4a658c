// qgpu/circuit/tests/frontend_test.cpp — the first wired stages (circuit/frontend.h) run through
// model/'s real decoder (circuit/tests/harness.h): five standard linear_attention layers over the
// trace vocabulary's embedding, driven by nothing but the trace tokens of real runs — the prompt
// that oracle/trace.h's encodePrompt packs for a random machine program (gen/program_gen.h), then
// the run the interpreter writes — in fp32 and bf16, chunked prefill, recurrent decode and mixed.
//
// What it pins down, at every op position of every step (the WM position for op 0, the last token
// of op k−1's record for op k, and the terminator position; the positions come from the
// interpreter's own encoder, appendTrace, cut after each op's record) and at every continuation
// position (the last token of the first record of an atomic with a register destination: its
// memrec, or the NOP that stands for it; appendTrace of the op without its register write):
//   - the EXEC latches: b, w, m = the step's block, warp and mask (oracle::Execution);
//   - j (4 bits and [j ≥ 16]) = the row: op k's first record's index in its block (k + the
//     atomics with a register destination before it, machine::recordsOf), the block's record
//     count at the terminator, the atomic's row + 1 at its continuation position;
//   - isOp = +1 at the op positions and −1 at every other position; isCont = +1 exactly at the
//     continuation positions; isTerm = +1 exactly at the terminator positions;
//   - the fetched head, sources and terminator words = the words the host packed into the prompt
//     (encodePrompt's tokens, read back tag by tag: the ROM row (b, j) = the j-th OP(a) of block b
//     and its OP(b), and the block's TERM word; 0 where the prompt has none);
//   - the register file's 3 ports × 4 lanes = the value of the op's source register k in each lane
//     as the interpreter had it before the op (an array model written from the interpreter's
//     per-op effects, OpEffects, cleared at each CTA start), 0 for an operand that is no register
//     (and at a continuation position, whose row has no sources).
// Every probed logit of every position exactly ±1 (one magnitude: the full layout, λ = 1).
// Expected values come from the interpreter and the host packer, never from the stage.
//
// The random programs include atomics with a register destination (gen/'s Mem class); every
// prompt is checked to decode back to its program (decodePrompt drops the continuation rows).
//
// Failing twins: j decoded one too high (the next op's words and operands) must be wrong; the
// prompt with its continuation rows left out (the atomics' second rows unwritten) must be wrong at
// the continuation positions (an absent row there reads as the terminator).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <map>

#include "circuit/frontend.h"
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
using trace::Family;
using trace::Token;

constexpr int kHidden = 1088;  // the front end takes 1,054 dims
constexpr int kLanes = 4;
constexpr int kPorts = 3;
constexpr float kUnit = 16;

// Probe logits.
constexpr int kPBlock = 0, kPWarp = 5, kPMask = 7, kPOp = 11, kPJ16 = 15, kPIsOp = 16,
              kPIsTerm = 17, kPHead = 18, kPSources = 50, kPTerm = 82, kPOperand = 114;
constexpr int kPIsCont = kPOperand + kPorts * kLanes * 32;
constexpr int kPredPorts = 4;  // guard, psrc0, psrc1, dstPred (FrontEnd::predPort)
constexpr int kPOldDst = kPIsCont + 1, kPPred = kPOldDst + kLanes * 32,
              kPExec = kPPred + kPredPorts * kLanes;
constexpr int kProbes = kPExec + 1;
constexpr int64_t kVocab = 1024;
static_assert(kVocab >= trace::kVocabSize && kVocab >= kProbes);

model::Qwen35Config config(int keyHeadDim) {
  model::Qwen35Config c = harness::config(kHidden, 5, 1024, kVocab);
  int heads = 0;
  for (int h : frontEndHeads(keyHeadDim)) heads = std::max(heads, h);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Bench {
  std::string dir;
  FrontEnd fe;
};

Bench build(const std::string& name, FrontEndTwin twin = FrontEndTwin::None, int keyHeadDim = 64) {
  CircuitWeights w(config(keyHeadDim));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  FrontEndSpec s;
  s.tokens = tokens;
  s.twin = twin;
  auto fe = buildFrontEnd(w, alloc, s);
  EXPECT_TRUE(fe.ok()) << fe.error().message;
  Bench b;
  if (!fe.ok()) return b;
  b.fe = fe.value();
  const FrontEnd& f = b.fe;
  harness::probe(w, kPBlock, f.execBlock);
  harness::probe(w, kPWarp, f.warp);
  harness::probe(w, kPMask, f.mask);
  harness::probe(w, kPOp, f.opIndex);
  harness::probe(w, kPJ16, Field{"j16", f.opAtLeast.at(f.opAtLeast.dims - 1), 1});
  harness::probe(w, kPIsOp, f.isOp);
  harness::probe(w, kPIsTerm, f.isTerm);
  harness::probe(w, kPHead, f.headWord);
  harness::probe(w, kPSources, f.sourcesWord);
  harness::probe(w, kPTerm, f.termWord);
  harness::probe(w, kPIsCont, f.isCont);
  for (int l = 0; l < kLanes; ++l)
    harness::probe(w, kPOldDst + l * 32, f.oldDst[static_cast<size_t>(l)]);
  for (int p = 0; p < kPredPorts; ++p)
    harness::probe(w, kPPred + p * kLanes, f.predPort[static_cast<size_t>(p)]);
  harness::probe(w, kPExec, f.exec);
  for (int p = 0; p < kPorts; ++p)
    for (int l = 0; l < kLanes; ++l)
      harness::probe(w, kPOperand + (p * kLanes + l) * 32,
                     f.rf.operand[static_cast<size_t>(p)][static_cast<size_t>(l)]);
  b.dir = harness::write(w, "frontend_" + name);
  return b;
}

// ---- Real runs and what each op position must hold ----

struct OpPosition {
  size_t pos = 0;
  int block = 0, warp = 0, mask = 0, j = 0;
  bool term = false;
  bool cont = false;  // a continuation position (isOp −1, isCont +1)
  bool afterNop = false;  // ... after the NOP of an atomic with no executing lane
  uint32_t head = 0, sources = 0, termWord = 0;
  std::array<std::array<uint32_t, kLanes>, kPorts> operand{};
  std::array<uint32_t, kLanes> oldDst{};  // the register the head word's dst names, before the op
  std::array<uint8_t, kPredPorts> pred{};  // lane bits of the predicate each port's code names
};

struct Case {
  std::vector<int64_t> tokens;
  std::vector<OpPosition> ops;  // increasing positions
  size_t prompt = 0;
  int steps = 0, ctas = 0;
  int contRows = 0;  // continuation rows in the prompt
};

// Field `name` of a packed word (trace::packedLayout).
uint32_t fieldOf(trace::PackedWord word, const char* name, uint32_t value) {
  for (const trace::PackedField& f : trace::packedLayout(word))
    if (std::string(f.name) == name) return (value >> f.offset) & ((1u << f.width) - 1);
  ADD_FAILURE() << "no packed field " << name;
  return 0;
}

// The words the host packed into the prompt, read back tag by tag (docs/trace.md "Prompt", the
// value chunks of "Values"): (block, op, slot) → word, block → terminator word.
struct PromptWords {
  std::map<std::array<int, 3>, uint32_t> op;
  std::map<int, uint32_t> term;
};
PromptWords promptWords(const std::vector<Token>& prompt) {
  PromptWords w;
  Family tag = Family::Run;
  int slot = 0, block = -1, opIndex = -1;
  int64_t acc = 0;
  bool inValue = false;
  for (Token t : prompt) {
    const Family f = trace::familyOf(t);
    const int i = trace::indexOf(t);
    if (f != Family::C && f != Family::T) {
      tag = f;
      slot = i;
      if (f == Family::OpWord && slot == static_cast<int>(trace::RomSlot::Head)) ++opIndex;
      continue;
    }
    const int d = i & 31;
    acc = inValue ? acc * 32 + d : (d >= 16 ? d - 32 : d);
    inValue = f == Family::C;
    if (f == Family::C) continue;
    const uint32_t v = static_cast<uint32_t>(acc);
    if (tag == Family::Blk) {
      block = static_cast<int>(v);
      opIndex = -1;
    } else if (tag == Family::OpWord) {
      w.op[{block, opIndex, slot}] = v;
    } else if (tag == Family::Term) {
      w.term[block] = v;
    }
  }
  return w;
}

// The prompt with its continuation rows left out (the twin): every OP(a) whose word has the
// continuation bit (the top field of packedLayout's head word), with its value.
int continuationBit() {
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead))
    if (std::string(f.name) == "continuation") return f.offset;
  ADD_FAILURE() << "the head word has no continuation field";
  return 31;
}

std::vector<Token> withoutContinuationRows(const std::vector<Token>& prompt, int* removed) {
  const int bit = continuationBit();
  std::vector<Token> out;
  *removed = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] == trace::opWord(trace::RomSlot::Head)) {
      size_t e = i + 1;
      int64_t acc = 0;
      for (; e < prompt.size(); ++e) {
        const int d = trace::indexOf(prompt[e]) & 31;
        acc = e == i + 1 ? (d >= 16 ? d - 32 : d) : acc * 32 + d;
        if (trace::familyOf(prompt[e]) == Family::T) break;
      }
      if ((static_cast<uint32_t>(acc) >> bit) & 1) {
        *removed += static_cast<int>(e - i + 1);
        i = e;
        continue;
      }
    }
    out.push_back(prompt[i]);
  }
  return out;
}

// The case of one program: its real run (real_runs.h) with what each site must hold; empty when
// the run does not finish. `dropContinuationRows`: the twin's prompt (positions moved back by the
// tokens removed; the expected values stay those of the real prompt).
Case programCase(const machine::Program& prog, const machine::Launch& launch, uint64_t stepBound,
                 size_t maxTokens, bool dropContinuationRows) {
  Case c;
  real_runs::Run run = real_runs::run(prog, launch, stepBound);
  if (!run.finished) return c;
  std::vector<Token> t = run.tokens;
  c.prompt = run.prompt;
  c.steps = run.steps;
  c.ctas = run.ctas;
  const PromptWords words = promptWords(std::vector<Token>(t.begin(), t.begin() + static_cast<long>(c.prompt)));
  for (const auto& [key, word] : words.op)
    if (key[2] == static_cast<int>(trace::RomSlot::Head) && ((word >> continuationBit()) & 1)) ++c.contRows;
  for (const real_runs::Site& s : run.sites) {
    const machine::Block& blk = prog.blocks[static_cast<size_t>(s.block)];
    OpPosition op;
    op.pos = s.pos;
    op.block = s.block;
    op.warp = s.warp;
    op.mask = s.mask;
    op.j = s.row;
    op.term = s.term;
    op.cont = s.cont;
    op.afterNop = s.afterNop;
    auto word = [&](int row, trace::RomSlot slot) {
      auto it = words.op.find({s.block, row % machine::kMaxOpsPerBlock, static_cast<int>(slot)});
      return it == words.op.end() ? 0u : it->second;
    };
    op.head = word(s.row, trace::RomSlot::Head);
    op.sources = word(s.row, trace::RomSlot::Sources);
    op.termWord = words.term.at(s.block);
    // The 4th register port and the predicate ports read what the fetched row's fields name
    // (an absent or continuation row: dst r0, every code 0 = none, which reads predicate 0).
    const uint32_t dst = fieldOf(trace::PackedWord::OpHead, "dst", op.head);
    op.oldDst = s.regs[dst];
    const uint32_t codes[kPredPorts] = {
        fieldOf(trace::PackedWord::OpHead, "guard predicate", op.head),
        fieldOf(trace::PackedWord::OpSources, "psrc0", op.sources),
        fieldOf(trace::PackedWord::OpSources, "psrc1", op.sources),
        fieldOf(trace::PackedWord::OpHead, "dstPred", op.head)};
    // Port 0 without a guard code reads the TERM word's branch predicate (frontend.h).
    const uint32_t branch = fieldOf(trace::PackedWord::Term, "branch predicate", op.termWord);
    for (int p = 0; p < kPredPorts; ++p) {
      const uint32_t c = p == 0 && codes[0] == 0 ? branch : codes[p];
      op.pred[static_cast<size_t>(p)] = s.preds[c == 0 ? 0 : c - 1];
    }
    if (!s.term && !s.cont) {
      // ... which at an op's position are the op's own (the interpreter's definition).
      const machine::Instr& in = blk.ops[static_cast<size_t>(s.k)];
      auto code = [](uint8_t pred) { return pred == machine::kNoPred ? 0u : pred + 1u; };
      EXPECT_EQ(dst, in.dst);
      EXPECT_EQ(codes[0], code(in.guard.pred));
      EXPECT_EQ(codes[1], code(in.psrc[0]));
      EXPECT_EQ(codes[2], code(in.psrc[1]));
      EXPECT_EQ(codes[3], code(in.dstPred));
    }
    if (!s.term && !s.cont)
      for (int k = 0; k < kPorts; ++k) {
        const machine::Operand& src = blk.ops[static_cast<size_t>(s.k)].src[static_cast<size_t>(k)];
        if (src.kind == machine::OperandKind::Reg)
          op.operand[static_cast<size_t>(k)] = s.regs[src.reg];
      }
    c.ops.push_back(op);
  }
  if (dropContinuationRows) {
    int removed = 0;
    std::vector<Token> runPart(t.begin() + static_cast<long>(c.prompt), t.end());
    t = withoutContinuationRows(std::vector<Token>(t.begin(), t.begin() + static_cast<long>(c.prompt)),
                                &removed);
    t.insert(t.end(), runPart.begin(), runPart.end());
    c.prompt -= static_cast<size_t>(removed);
    for (OpPosition& op : c.ops) op.pos -= static_cast<size_t>(removed);
  }
  if (t.size() > maxTokens) t.resize(maxTokens);
  while (!c.ops.empty() && c.ops.back().pos >= t.size()) c.ops.pop_back();
  c.tokens.assign(t.begin(), t.end());
  return c;
}

// The case of random program `seed` (real_runs::policy), cut at maxTokens.
Case realCase(uint64_t seed, size_t maxTokens, real_runs::Size size,
              bool dropContinuationRows = false) {
  auto g = gen::generateProgram(real_runs::policy(size), seed);
  EXPECT_TRUE(g.ok()) << g.error().message;
  if (!g.ok()) return Case{};
  return programCase(g->program, g->launch, g->stepBound, maxTokens, dropContinuationRows);
}

// The expected sign of every probe at every position (nullopt-free: non-op positions check isOp
// only, and every logit's magnitude).
struct Checked {
  harness::SignCheck bits;
  harness::LayoutCheck layout;
  int opPositions = 0, terms = 0, conts = 0, contsAfterNop = 0;
  int oldNonzero = 0;  // op positions whose old dst value is nonzero in some lane
  int predTrue = 0;    // op positions where some predicate port reads a true lane
};

void checkCase(Checked& out, const Case& c, const std::vector<std::vector<float>>& rows) {
  EXPECT_EQ(rows.size(), c.tokens.size());
  size_t next = 0;
  for (size_t p = 0; p < rows.size(); ++p) {
    const std::vector<float>& row = rows[p];
    const std::string where = "position " + std::to_string(p);
    if (next < c.ops.size() && c.ops[next].pos == p) {
      const OpPosition& op = c.ops[next++];
      ++out.opPositions;
      out.terms += op.term ? 1 : 0;
      out.conts += op.cont ? 1 : 0;
      out.contsAfterNop += op.afterNop ? 1 : 0;
      out.oldNonzero += std::any_of(op.oldDst.begin(), op.oldDst.end(), [](uint32_t v) { return v != 0; });
      out.predTrue += std::any_of(op.pred.begin(), op.pred.end(), [](uint8_t v) { return v != 0; });
      std::vector<bool> want;
      auto put = [&](uint64_t v, int n, bool inverted) {
        for (int i = 0; i < n; ++i) want.push_back(((v >> i) & 1) != inverted);
      };
      put(static_cast<uint64_t>(op.block), 5, false);
      put(static_cast<uint64_t>(op.warp), 2, false);
      put(static_cast<uint64_t>(op.mask), 4, false);
      put(static_cast<uint64_t>(op.j % 16), 4, false);
      put(op.j >= 16, 1, false);
      put(!op.cont, 1, false);
      put(op.term, 1, false);
      put(op.head, 32, true);
      put(op.sources, 32, true);
      put(op.termWord, 32, true);
      for (int s = 0; s < kPorts; ++s)
        for (int l = 0; l < kLanes; ++l)
          put(op.operand[static_cast<size_t>(s)][static_cast<size_t>(l)], 32, false);
      put(op.cont, 1, false);
      for (int l = 0; l < kLanes; ++l) put(op.oldDst[static_cast<size_t>(l)], 32, false);
      for (int p = 0; p < kPredPorts; ++p) put(op.pred[static_cast<size_t>(p)], kLanes, false);
      put(!op.cont && !op.term, 1, false);  // exec
      harness::checkBits(out.bits, row, want, 1.0,
                         where + (op.cont ? " (continuation row " : " (row ") +
                             std::to_string(op.j) + " of block " + std::to_string(op.block) + ")");
    } else {
      harness::checkBits(out.bits, {row[kPIsOp], row[kPIsCont], row[kPExec]}, {false, false, false},
                         1.0, where + " (no op) isOp, isCont, exec");
    }
  }
  const harness::LayoutCheck l = harness::checkLayout(rows, 1.0f);
  out.layout.logits += l.logits;
  out.layout.offNominal += l.offNominal;
  out.layout.magnitudes.insert(l.magnitudes.begin(), l.magnitudes.end());
  if (out.layout.first.empty()) out.layout.first = l.first;
}

// `runTokens` > 0: only programs with a continuation position in the first runTokens tokens of
// the run (the short paths' prefixes), so that every path meets one, and an op position there
// whose old dst value or a predicate port reads a nonzero lane (so the ports have something to
// get wrong on every path).
using real_runs::Size;
std::vector<Case> cases(int count, size_t maxTokens, Size size = Size::Full, bool drop = false,
                        size_t runTokens = 0) {
  std::vector<Case> out;
  for (uint64_t seed = 1; static_cast<int>(out.size()) < count && seed < 200; ++seed) {
    Case c = realCase(seed, maxTokens, size, drop);
    if (drop && c.contRows == 0) continue;  // the twin needs continuation rows to leave out
    if (runTokens > 0 && std::none_of(c.ops.begin(), c.ops.end(), [&](const OpPosition& op) {
          return op.cont && op.pos < c.prompt + runTokens;
        }))
      continue;
    auto nonzero = [](const auto& a) {
      return std::any_of(a.begin(), a.end(), [](auto v) { return v != 0; });
    };
    if (runTokens > 0 && std::none_of(c.ops.begin(), c.ops.end(), [&](const OpPosition& op) {
          return op.pos < c.prompt + runTokens && (nonzero(op.oldDst) || nonzero(op.pred));
        }))
      continue;
    if (!c.tokens.empty() && !c.ops.empty()) out.push_back(std::move(c));
  }
  return out;
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

// The cases of one run of the matrix: fp32 prefill whole programs (2 per commit, 20 under
// QGPU_CIRCUIT_FULL=1, each with an atomic's continuation position); the other paths and bf16 one
// short program's prefix — its whole prompt (every ROM word, over the 64-token chunk boundary)
// and the first steps, up to an atomic's continuation position (bf16 matmuls are ~20× slower
// here, decode runs one forward per token); QGPU_CIRCUIT_FULL=1: 2 programs, longer prefixes.
void runPath(ComputeDtype dtype, Path path) {
  static const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  const bool f32 = dtype == ComputeDtype::F32;
  std::vector<Case> cs;
  if (f32 && path == Path::Prefill) {
    cs = cases(harness::inputs(2, 20), 2000, Size::Full, false, 2000);
  } else {
    // Short prompts: every ROM word, then the first steps, of a tiny program (real_runs::Size;
    // QGPU_CIRCUIT_FULL=1: small ones); the mixed path's cached continuation starts inside the
    // prompt (its first min(100, n/2) tokens cross the 64-token chunk boundary).
    const size_t extra = static_cast<size_t>(
        path == Path::Prefill ? harness::inputs(80, 600)
        : path == Path::Decode ? harness::inputs(40, 300)
                               : harness::inputs(60, 600));
    const Size size = harness::fullInputs() ? Size::Small : Size::Tiny;
    std::vector<Case> found = cases(harness::inputs(1, 2), 2000, size, false, extra);
    if (found.empty()) found = cases(harness::inputs(1, 2), 2000, Size::Small, false, extra);
    for (const Case& c : found) cs.push_back(prefix(c, c.prompt + extra));
  }
  size_t tokens = 0, prompts = 0;
  for (const Case& c : cs) tokens += c.tokens.size(), prompts += c.prompt;
  const auto start = std::chrono::steady_clock::now();
  const Checked r = runCases(b, cs, dtype, path);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "heads per layer";
  for (const int h : b.fe.heads) std::cout << " " << h;
  std::cout << "; " << dtypeName(dtype) << " " << harness::pathName(path) << " (" << cs.size()
            << " programs, " << tokens << " tokens (" << prompts << " in prompts), " << r.opPositions << " op positions, "
            << r.terms << " terminator positions, " << r.conts << " continuation positions ("
            << r.contsAfterNop << " after a NOP; " << r.oldNonzero << " with a nonzero old dst, "
            << r.predTrue << " with a true predicate read), " << s
            << " s): " << r.bits.summary()
            << "; layout " << r.layout.summary() << std::endl;
  EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                           << r.bits.summary();
  EXPECT_TRUE(r.layout.ok()) << r.layout.summary();
  EXPECT_GT(r.opPositions, f32 && path == Path::Prefill ? 10 : 3);  // a short prefix: a few steps
  EXPECT_GT(r.terms, 0);
  EXPECT_GT(r.conts, 0);  // every path meets an atomic's continuation position
  // The ports read something to get wrong (the short paths: cases() picks such a program).
  EXPECT_GT(r.oldNonzero + r.predTrue, 0);
  if (f32 && path == Path::Prefill) {
    EXPECT_GT(r.oldNonzero, 5);
    EXPECT_GT(r.predTrue, 5);
  }
}

TEST(FrontEnd, RealRunsFp32Prefill) { runPath(ComputeDtype::F32, Path::Prefill); }
TEST(FrontEnd, RealRunsFp32Decode) { runPath(ComputeDtype::F32, Path::Decode); }
TEST(FrontEnd, RealRunsFp32Mixed) { runPath(ComputeDtype::F32, Path::Mixed); }
TEST(FrontEnd, RealRunsBf16Prefill) { runPath(ComputeDtype::BF16, Path::Prefill); }
TEST(FrontEnd, RealRunsBf16Decode) { runPath(ComputeDtype::BF16, Path::Decode); }
TEST(FrontEnd, RealRunsBf16Mixed) { runPath(ComputeDtype::BF16, Path::Mixed); }

TEST(FrontEndTwin, OpIndexOffByOneFetchesTheWrongOp) {
  const Bench b = build("offbyone", FrontEndTwin::OpIndexOffByOne);
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(1, 2000, Size::Small);
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "op index off by one: " << r.bits.summary() << std::endl;
  EXPECT_GT(r.bits.wrongSign, 100);
}

// The predicate ports keyed one predicate too high: they read p + 1 mod 8 (code 0 too: p1), wrong
// wherever its lane bits differ from p's.
TEST(FrontEndTwin, PredicateKeyOffByOneReadsTheWrongPredicate) {
  const Bench b = build("predkey", FrontEndTwin::PredKeyOffByOne);
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(2, 2000);
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "predicate key off by one (" << r.predTrue << " positions with a true read): "
            << r.bits.summary() << std::endl;
  EXPECT_GT(r.bits.wrongSign, 0);
}

// An atomic with a register destination and no executing lane (its guard false in every active
// lane) writes NOP, then its regrec (trace v5): j must still reach the next op's row. By hand:
// block 0 = p0 = tid > 99 (false, row 0: WP); @p0 atom.add r1, [0], 1 (rows 1, 2: NOP, then
// WU(r1) T(0)); add r2, r1, 5 (row 3); atom.add r3, [0], 2 in every lane (rows 4, 5: MG(0111),
// then WR(r3)); add r4, r3, 1 (row 6); exit (the terminator at j = 7). 3 threads.
TEST(FrontEnd, AnAtomicWithNoExecutingLaneKeepsTheRows) {
  static const Bench b = build("nolanes");
  ASSERT_FALSE(b.dir.empty());
  machine::Program p;
  machine::Block blk;
  machine::Instr setp;
  setp.op = machine::Op::SetGtU;
  setp.dstPred = 0;
  setp.src = {machine::Operand::s(machine::Special::TidX), machine::Operand::i(99), {}};
  blk.ops.push_back(setp);
  auto atom = [](uint8_t dst, uint32_t b) {
    machine::Instr in;
    in.op = machine::Op::AtomAdd;
    in.dst = dst;
    in.src = {machine::Operand::i(0), machine::Operand::i(b), {}};
    return in;
  };
  auto add = [](uint8_t dst, uint8_t a, uint32_t b) {
    machine::Instr in;
    in.op = machine::Op::Add;
    in.dst = dst;
    in.src = {machine::Operand::r(a), machine::Operand::i(b), {}};
    return in;
  };
  machine::Instr guarded = atom(1, 1);
  guarded.guard = machine::Guard{0, false};
  blk.ops.push_back(guarded);
  blk.ops.push_back(add(2, 1, 5));
  blk.ops.push_back(atom(3, 2));
  blk.ops.push_back(add(4, 3, 1));
  blk.term.kind = machine::TermKind::Exit;
  p.blocks.push_back(blk);
  machine::Launch l;
  l.gridX = 1;
  l.blockX = 3;
  ASSERT_TRUE(machine::verify(p, l).ok()) << machine::verify(p, l).error().message;
  const Case c = programCase(p, l, 100, 2000, false);
  ASSERT_FALSE(c.tokens.empty());
  int afterNop = 0, conts = 0;
  for (const OpPosition& op : c.ops) {
    afterNop += op.afterNop ? 1 : 0;
    conts += op.cont ? 1 : 0;
  }
  EXPECT_EQ(conts, 2);
  EXPECT_EQ(afterNop, 1);
  EXPECT_EQ(c.ops.back().j, 7);  // the terminator: 7 records
  EXPECT_TRUE(c.ops.back().term);
  const Checked r = runCases(b, {c}, ComputeDtype::F32, Path::Prefill);
  std::cout << "an atomic with no executing lane: " << r.opPositions << " positions, " << r.conts
            << " continuation (" << r.contsAfterNop << " after a NOP): " << r.bits.summary()
            << std::endl;
  EXPECT_TRUE(r.bits.ok()) << r.bits.summary();
  EXPECT_EQ(r.contsAfterNop, 1);
}

// The prompt without its continuation rows: at an atomic's continuation position the row is
// absent, so isOp, isCont and isTerm are wrong there, and the head word reads 0.
TEST(FrontEndTwin, ContinuationRowsLeftOutMisreadTheAtomicsSecondRecord) {
  static const Bench b = build("real");
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(1, 2000, Size::Small, true);
  ASSERT_FALSE(cs.empty());
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "continuation rows left out: " << r.conts << " continuation positions, "
            << r.bits.summary() << std::endl;
  EXPECT_GT(r.conts, 0);
  EXPECT_GE(r.bits.wrongSign, 3 * r.conts);  // isOp, isCont, isTerm at least
}

// Key head dim 128 (the `2b` shape): the one-row memories (ROM banks, register heads) read through
// the norm rail (circuit/memory.h "Key head dim"), so every fetched word and operand bit is exactly
// ±1 and every probed dim ±nominal. (Before the rail: 201 of 11,943 bits ulps off, 2 programs;
// docs/circuit.md §9 "The norm rail".)
TEST(FrontEnd, KeyHeadDim128EveryBitIsExact) {
  const Bench b = build("dk128", FrontEndTwin::None, 128);
  ASSERT_FALSE(b.dir.empty());
  const std::vector<Case> cs = cases(1, 2000);
  const Checked r = runCases(b, cs, ComputeDtype::F32, Path::Prefill);
  std::cout << "key head dim 128, fp32 prefill: " << r.bits.summary() << "; layout "
            << r.layout.summary() << std::endl;
  EXPECT_EQ(r.bits.wrongSign, 0);
  EXPECT_EQ(r.bits.inexact, 0);
  EXPECT_TRUE(r.layout.ok()) << r.layout.summary();
}

}  // namespace
}  // namespace qgpu::circuit
