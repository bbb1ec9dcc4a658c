// qgpu/circuit/tests/real_runs.h — the real runs the front-end tests drive their stages with
// (frontend_test, operands_test): a random machine program (gen/program_gen.h) with the generator
// policy they share, its prompt (oracle/trace.h's encodePrompt) and the run the interpreter
// writes, cut at every position a stage is checked at, with the interpreter's state there.
//
// The sites, in increasing token position (the positions come from the interpreter's own
// encoder, appendTrace, cut after each op's record):
//   op k of a step      the WM position for op 0, the last token of op k−1's record for op k
//   the terminator      after the last op's record (k = the block's op count)
//   a continuation      the last token of the first record of an atomic with a register
//                       destination (its memrec, or the NOP that stands for it): appendTrace of
//                       the op without its register write
// and at each the state *before* the op, from the interpreter's per-op effects (OpEffects), never
// from a stage: the warp's registers (an array model cleared at each CTA start, written with the
// active lanes' values of every register write) and its predicates (cleared at every step — the
// machine's predicates are block-local and unset at block entry, docs/machine.md §4 — and written
// with every predicate write's lane bits, inactive lanes 0, as the WP record carries them).
//
// What a test expects of a stage is its own business: this header only runs the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit::real_runs {

constexpr int kLanes = machine::kLanes;
using LaneWords = std::array<uint32_t, kLanes>;
using WarpRegs = std::array<LaneWords, machine::kRegs>;

// One checked position and the interpreter's state there (see the header).
struct Site {
  size_t pos = 0;     // token position in Run::tokens (prompt included)
  uint32_t cta = 0;
  int block = 0, warp = 0, mask = 0;
  int k = 0;          // the op's index in the block (the block's op count at the terminator)
  int row = 0;        // the ROM row j: op k's first record's index (k + the two-record ops before
                      // it, machine::recordsOf); the atomic's row + 1 at its continuation
  bool term = false;  // the terminator position
  bool cont = false;  // a continuation position
  bool afterNop = false;  // ... of an atomic with no executing lane (its first record is NOP)
  WarpRegs regs{};    // the warp's registers before the op (r0 reads 0)
  std::array<uint8_t, machine::kPreds> preds{};  // the warp's predicate lane bits before the op
};

struct Run {
  std::vector<trace::Token> tokens;  // the prompt, then the interpreter's run
  size_t prompt = 0;                 // encodePrompt's tokens (ends with RUN)
  std::vector<Site> sites;           // increasing positions
  int steps = 0, ctas = 0;           // ctas: CTA starts after the first
  bool finished = false;             // the run ended with Finished (else: empty tokens)
};

// The program sizes of the front-end tests.
enum class Size : uint8_t {
  Full,   // up to 3 regions, 10 blocks, 5 ops per block
  Small,  // up to 2 regions, 6 blocks, 3 ops, no initial global words (a short prompt)
  Tiny,   // one flat region of up to 3 blocks, 3 ops, memory ops twice as likely, no initial
          // global words, no shared memory or spill slots (a prompt of about 100 tokens, for the
          // paths that run one forward per token)
};

// The generator policy of the front-end tests: up to 2 CTAs of up to 12 threads, no divergent
// barrier, no out-of-range address, the program size as above.
inline gen::Policy policy(Size size) {
  gen::Policy p;
  p.maxBlockX = 12;
  p.maxGrid = 2;
  p.maxRegions = size == Size::Full ? 3 : size == Size::Small ? 2 : 1;
  p.maxBlocks = size == Size::Full ? 10 : size == Size::Small ? 6 : 3;
  p.maxOps = size == Size::Full ? 5 : 3;
  if (size != Size::Full) p.initNonzeroProb = 0;
  if (size == Size::Tiny) {
    p.maxDepth = 0;
    p.wMem = 8;
    p.maxSharedWords = 0;
    p.maxSpillSlots = 0;
  }
  p.divergentBarrierProb = 0;
  p.outOfRangeProb = 0;
  return p;
}
inline gen::Policy policy(bool small) { return policy(small ? Size::Small : Size::Full); }

// The prompt and run of `prog` with its sites; `finished` false (and nothing else) when the run
// does not finish within stepBound. Checks that the prompt decodes back to the program and that
// the run part is oracle::run's trace.
inline Run run(const machine::Program& prog, const machine::Launch& launch, uint64_t stepBound) {
  Run c;
  std::vector<trace::Token> t = trace::encodePrompt(prog, launch);
  {
    auto back = trace::decodePrompt(t);
    EXPECT_TRUE(back.ok() && back->program.blocks == prog.blocks)
        << (back.ok() ? "round trip differs" : back.error().message);
  }
  c.prompt = t.size();
  oracle::RunOptions o;
  o.maxSteps = stepBound;
  auto started = oracle::Execution::start(prog, launch, o);
  EXPECT_TRUE(started.ok());
  if (!started.ok()) return Run{};
  oracle::Execution ex = std::move(started).value();
  std::array<WarpRegs, machine::kMaxWarps> regs{};
  for (;;) {
    const oracle::StepEvent e = ex.next();
    if (e.kind == oracle::EventKind::CtaStart) {
      regs = {};
      ++c.ctas;
    }
    if (e.kind == oracle::EventKind::Step) {
      ++c.steps;
      const oracle::StepEffects& st = e.step;
      const machine::Block& blk = prog.blocks[st.block];
      const int nops = static_cast<int>(blk.ops.size());
      std::array<uint8_t, machine::kPreds> preds{};  // unset at block entry
      int rec = 0;
      for (int k = 0; k <= st.numOps; ++k) {
        oracle::StepEvent cut = e;
        cut.step.numOps = static_cast<uint8_t>(k);
        std::vector<trace::Token> upTo;
        oracle::appendTrace(cut, upTo);
        Site s;
        s.pos = t.size() + upTo.size() - 1;
        s.cta = st.cta;
        s.block = st.block;
        s.warp = st.warp;
        s.mask = st.mask;
        s.k = k;
        s.row = rec;
        s.term = k == nops;
        s.regs = regs[st.warp];
        s.preds = preds;
        c.sites.push_back(s);
        if (k < st.numOps && machine::recordsOf(blk.ops[static_cast<size_t>(k)]) == 2) {
          cut.step.numOps = static_cast<uint8_t>(k + 1);
          cut.step.ops[static_cast<size_t>(k)].writesReg = false;
          std::vector<trace::Token> first;
          oracle::appendTrace(cut, first);
          Site c2 = s;
          c2.pos = t.size() + first.size() - 1;
          c2.row = rec + 1;
          c2.cont = true;
          c2.afterNop = st.ops[static_cast<size_t>(k)].exec == 0;
          c.sites.push_back(c2);
        }
        if (k < nops) rec += machine::recordsOf(blk.ops[static_cast<size_t>(k)]);
        if (k < st.numOps) {
          const oracle::OpEffects& fx = st.ops[static_cast<size_t>(k)];
          if (fx.writesReg)
            for (int l = 0; l < kLanes; ++l)
              if ((st.mask >> l) & 1)
                regs[st.warp][fx.reg][static_cast<size_t>(l)] = fx.regs[static_cast<size_t>(l)];
          if (fx.writesPred) preds[fx.pred] = fx.predBits;
        }
      }
    }
    oracle::appendTrace(e, t);
    if (e.kind != oracle::EventKind::Step && e.kind != oracle::EventKind::CtaStart) {
      if (e.kind != oracle::EventKind::Finished) return Run{};
      break;
    }
  }
  auto r = oracle::run(prog, launch, o);
  EXPECT_TRUE(r.ok());
  if (r.ok()) {
    EXPECT_EQ(std::vector<trace::Token>(t.begin() + static_cast<long>(c.prompt), t.end()), r->trace);
  }
  c.tokens = std::move(t);
  c.finished = true;
  return c;
}

// The first `n` tokens of a run and the sites among them.
inline Run prefix(const Run& c, size_t n) {
  Run p = c;
  if (p.tokens.size() > n) p.tokens.resize(n);
  while (!p.sites.empty() && p.sites.back().pos >= p.tokens.size()) p.sites.pop_back();
  return p;
}

}  // namespace qgpu::circuit::real_runs
