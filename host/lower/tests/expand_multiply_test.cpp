// qgpu/host/lower/tests/expand_multiply_test.cpp — the multiply expansion (expand_multiply.h):
// tiny machine programs run by the interpreter before and after the pass, every result compared
// with oracle/semantics.h evalAlu computed here (never with the pass's output), on every pair of
// edge values and 4,000 seeded random pairs per operand shape, for mul, mad, mulhi.u and mulhi.s;
// guarded multiplies (guard-false lanes keep the destination) and a predicate live across the
// split; the chain for immediates (no new block) and the loop for the rest (at most 11 / 32
// steps, fewer for small multipliers); with highOnly, mulhi through 16-bit halves (2 steps more,
// the same suite of inputs and shapes); a multiply in a loop with per-lane trip counts against
// values worked here in plain C++; the expanded programs verify; each over-limit case a typed
// OverLimit naming the op, with a twin that fits.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "host/lower/expand_multiply.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "oracle/semantics.h"
#include "oracle/tests/builder.h"

namespace qgpu::lower {
namespace {

using machine::Block;
using machine::Instr;
using machine::Op;
using machine::Operand;
using machine::Program;
using machine::Special;
using machine::Terminator;
using machine::build::alu;
using machine::build::cmp;
using machine::build::I;
using machine::build::R;

constexpr std::array<Op, 4> kMulOps = {Op::Mul, Op::Mad, Op::MulHiU, Op::MulHiS};
constexpr uint32_t kThreads = 8;
// Memory: a[8] at word 0, b[8] at 8, c[8] at 16, out[8] at 24; byte offsets below.
constexpr int32_t kB = 32, kC = 64, kOut = 96;
constexpr uint32_t kOld = 0x5a5a5a5au;  // the destination's value before the op

Instr ld(uint8_t dst, int32_t offset) { return machine::build::ld(machine::Space::Global, dst, R(1), offset); }
Instr st(int32_t offset, Operand value) { return machine::build::st(machine::Space::Global, R(1), value, offset); }

// How the multiply reads its operands: a = r2 (a[t]) or an immediate or %tid.x, b = r3 (b[t]) or
// an immediate or %ntid.x, c = r4 (c[t]); the destination r5 (holding kOld) or an operand's own
// register; guarded by "a[t] is odd" or not.
struct Shape {
  const char* name;
  enum { Fresh, IntoA, IntoB, IntoC } dst = Fresh;
  bool aImm = false, bImm = false, aTid = false, bNtid = false;
  bool guarded = false;
};

const std::vector<Shape> kShapes = {
    {"reg, reg"},
    {"into a", Shape::IntoA},
    {"into b", Shape::IntoB},
    {"into c", Shape::IntoC},
    {"reg, imm", Shape::Fresh, false, true},
    {"imm, reg", Shape::Fresh, true, false},
    {"tid, ntid", Shape::Fresh, false, false, true, true},
    {"guarded", Shape::Fresh, false, false, false, false, true},
    {"guarded into a", Shape::IntoA, false, false, false, false, true},
};

uint8_t dstOf(const Shape& s) {
  switch (s.dst) {
    case Shape::IntoA: return 2;
    case Shape::IntoB: return 3;
    case Shape::IntoC: return 4;
    case Shape::Fresh: break;
  }
  return 5;
}

// selp dst, 11, 22, p1: the guard predicate read after the multiply (live across a split).
Instr readGuard(uint8_t dst) {
  Instr keep;
  keep.op = Op::Selp;
  keep.dst = dst;
  keep.src = {I(11), I(22), Operand{}};
  keep.psrc = {1, machine::kNoPred};
  return keep;
}

// One block: load a, b, c, r5 = kOld, p1 = a odd (the guard), the multiply, store the destination,
// then a selp reading p1 after the multiply (a predicate live across a split) into out + 4 words.
Program multiplyProgram(Op op, const Shape& s, uint32_t imm) {
  Block blk;
  blk.ops = {alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)), ld(2, 0), ld(3, kB), ld(4, kC),
             alu(Op::Mov, 5, I(kOld)), alu(Op::And, 6, R(2), I(1)), cmp(Op::SetNe, 1, R(6), I(0))};
  const Operand a = s.aImm ? I(imm) : s.aTid ? Operand::s(Special::TidX) : R(2);
  const Operand b = s.bImm ? I(imm) : s.bNtid ? Operand::s(Special::NtidX) : R(3);
  Instr m = alu(op, dstOf(s), a, b, machine::numGeneralSources(op) == 3 ? R(4) : Operand{});
  if (s.guarded) m.guard = {1, false};
  blk.ops.push_back(m);
  blk.ops.push_back(st(kOut, R(dstOf(s))));
  blk.ops.push_back(readGuard(7));
  blk.ops.push_back(st(kOut + 4 * 32, R(7)));  // word 24 + 32 + t
  blk.term.kind = machine::TermKind::Exit;
  Program p;
  p.name = "mul";
  p.blocks = {blk};
  return p;
}

using Memory = std::array<uint32_t, machine::kGlobalWords>;

struct Run {
  Memory global{};
  int steps = 0;
};

Run runProgram(const Program& p, const Memory& initial, uint32_t threads = kThreads) {
  machine::Launch launch;
  launch.blockX = threads;
  launch.global = initial;
  auto r = oracle::run(p, launch, oracle::RunOptions{100000, false});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  EXPECT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.str();
  return {r->global, static_cast<int>(r->blockExecs)};
}

bool hasMultiply(const Program& p) {
  for (const Block& b : p.blocks)
    for (const Instr& in : b.ops)
      if (isMultiply(in.op)) return true;
  return false;
}

bool hasMultiplyHigh(const Program& p) {
  for (const Block& b : p.blocks)
    for (const Instr& in : b.ops)
      if (isMultiplyHigh(in.op)) return true;
  return false;
}

ExpandMultiplyOptions highOnly() {
  ExpandMultiplyOptions o;
  o.highOnly = true;
  return o;
}

Program expanded(const Program& p, ExpandMultiplyStats* stats = nullptr,
                 const ExpandMultiplyOptions& options = {}) {
  auto e = expandMultiply(p, options, stats);
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().str());
  if (!e.ok()) return p;
  EXPECT_FALSE(options.highOnly ? hasMultiplyHigh(*e) : hasMultiply(*e));
  EXPECT_TRUE(machine::verify(*e).ok());
  return *e;
}

struct Inputs {
  uint32_t a, b, c;
};

// Runs `op` with `shape` on the inputs 8 lanes at a time, before and after the pass: each output
// word is evalAlu's (or kOld in a guard-false lane), the predicate read after the op is the
// guard's, and the inputs are unchanged. Returns the inputs checked.
size_t check(Op op, const Shape& shape, const std::vector<Inputs>& inputs, uint32_t imm = 0,
             const ExpandMultiplyOptions& options = {}) {
  const Program original = multiplyProgram(op, shape, imm);
  const Program after = expanded(original, nullptr, options);
  size_t checked = 0;
  for (size_t first = 0; first < inputs.size(); first += kThreads) {
    Memory m{};
    for (uint32_t t = 0; t < kThreads; ++t) {
      const Inputs& in = inputs[(first + t) % inputs.size()];
      m[t] = in.a;
      m[8 + t] = in.b;
      m[16 + t] = in.c;
    }
    const Run before = runProgram(original, m), now = runProgram(after, m);
    for (uint32_t t = 0; t < kThreads; ++t) {
      const uint32_t a = shape.aImm ? imm : shape.aTid ? t : m[t];
      const uint32_t b = shape.bImm ? imm : shape.bNtid ? kThreads : m[8 + t];
      const bool odd = (m[t] & 1) != 0;
      const uint32_t want = shape.guarded && !odd ? (shape.dst == Shape::IntoA ? m[t] : kOld)
                                                   : oracle::evalAlu(op, a, b, m[16 + t]).value();
      const size_t w = 24 + t;
      if (before.global[w] != want || now.global[w] != want) {
        ADD_FAILURE() << machine::opInfo(op).mnemonic << " 0x" << std::hex << a << ", 0x" << b << ", 0x"
                      << m[16 + t] << " (" << shape.name << "): want 0x" << want << ", native 0x"
                      << before.global[w] << ", expanded 0x" << now.global[w];
        return checked;
      }
      if (now.global[56 + t] != (odd ? 11u : 22u)) {
        ADD_FAILURE() << "the guard predicate read after the op (" << shape.name << ", lane " << t << ")";
        return checked;
      }
      for (size_t in = t; in < 24; in += 8)
        if (now.global[in] != m[in]) {
          ADD_FAILURE() << "input word " << in << " changed (" << shape.name << ")";
          return checked;
        }
    }
    checked += kThreads;
  }
  return checked;
}

const std::vector<uint32_t> kEdges = {0u,          1u,          2u,          3u,          7u,          255u,
                                      0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu,
                                      0xfffffffdu, 0x12345678u, 0x40000000u, 0x80808081u, 0xaaaaaaabu};

std::vector<Inputs> edgeInputs() {
  std::vector<Inputs> v;
  for (size_t i = 0; i < kEdges.size(); ++i)
    for (uint32_t b : kEdges) v.push_back({kEdges[i], b, kEdges[kEdges.size() - 1 - i]});
  return v;
}

std::vector<Inputs> randomInputs(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  auto value = [&]() -> uint32_t {
    switch (rng() % 4) {  // small, 16-bit, any, negative-small: trip counts of every length
      case 0: return rng() % 16;
      case 1: return rng() & 0xffff;
      case 2: return static_cast<uint32_t>(rng());
      default: return 0u - (rng() % 300);
    }
  };
  std::vector<Inputs> v;
  for (size_t i = 0; i < n; ++i) v.push_back({value(), value(), value()});
  return v;
}

// evalAlu's products as docs/machine.md §4 states them, worked by hand.
TEST(ExpandMultiply, ReferenceProductsAreTheIsaOnes) {
  EXPECT_EQ(oracle::evalAlu(Op::Mul, 0x10000u, 0x10000u, 0).value(), 0u);
  EXPECT_EQ(oracle::evalAlu(Op::Mad, 3, 5, 7).value(), 22u);
  EXPECT_EQ(oracle::evalAlu(Op::MulHiU, 0xffffffffu, 0xffffffffu, 0).value(), 0xfffffffeu);
  EXPECT_EQ(oracle::evalAlu(Op::MulHiS, 0xffffffffu, 0xffffffffu, 0).value(), 0u);         // -1 · -1 = 1
  EXPECT_EQ(oracle::evalAlu(Op::MulHiS, 0x80000000u, 2, 0).value(), 0xffffffffu);          // -2^31 · 2
  EXPECT_EQ(oracle::evalAlu(Op::MulHiU, 0x80808081u, 510, 0).value(), 256u);  // 510 / 255 = 256 >> 7
}

TEST(ExpandMultiply, EveryEdgeTripleEqualsEvalAluInEveryShape) {
  for (Op op : kMulOps)
    for (const Shape& s : kShapes) {
      if (s.dst == Shape::IntoC && op != Op::Mad) continue;
      SCOPED_TRACE(std::string(machine::opInfo(op).mnemonic) + " " + s.name);
      EXPECT_EQ(check(op, s, edgeInputs(), 0xfffffffdu), 256u);
    }
}

TEST(ExpandMultiply, FourThousandRandomTriplesPerShapeEqualEvalAlu) {
  uint32_t seed = 20261203;
  for (Op op : kMulOps)
    for (const Shape& s : kShapes) {
      if (s.dst == Shape::IntoC && op != Op::Mad) continue;
      SCOPED_TRACE(std::string(machine::opInfo(op).mnemonic) + " " + s.name);
      EXPECT_EQ(check(op, s, randomInputs(seed++, 4000), 0x9e3779b9u), 4000u);
    }
}

// Immediates: a chain (in place, no new block) when it fits, else a loop; both exact, for every
// immediate of kEdges and the compilers' usual constants, on a and on b.
TEST(ExpandMultiply, ImmediatesChainWhenTheyFitAndStayExact) {
  const std::vector<uint32_t> imms = {0u, 1u, 3u, 5u, 6u, 7u, 26u, 255u, 0x8081u, 0x4ec5u, 0u - 1u, 0u - 2u, 0u - 3u,
                                      0x80000000u, 0x55555555u, 0xaaaaaaabu, 0x9e3779b9u, 0x80808081u};
  const Shape onB{"reg, imm", Shape::Fresh, false, true};
  const Shape onA{"imm, reg", Shape::Fresh, true, false};
  for (uint32_t k : imms)
    for (Op op : {Op::Mul, Op::Mad}) {
      SCOPED_TRACE(std::string(machine::opInfo(op).mnemonic) + " by 0x" + std::to_string(k));
      EXPECT_EQ(check(op, onB, randomInputs(k, 64), k), 64u);
      EXPECT_EQ(check(op, onA, randomInputs(k + 1, 64), k), 64u);
    }
  ExpandMultiplyStats s;
  expanded(multiplyProgram(Op::Mul, onB, 255), &s);
  EXPECT_EQ(s.chains, 1);  // (x << 8) - x
  EXPECT_EQ(s.blocksAfter, 1);
  EXPECT_EQ(s.opsAfter, s.opsBefore + 1);
  expanded(multiplyProgram(Op::Mul, onB, 0x55555555u), &s);  // 16 digits: not in a 16-op block
  EXPECT_EQ(s.loops, 1);
  EXPECT_EQ(s.blocksAfter, 3);
}

// The loop's trip count follows the smaller operand: 1 step for a multiplier under 8, at most 11
// (mul) and 32 (mulhi) for any; every lane here has the same operands, so one warp is one path.
// Steps added per warp: the loop's, plus one (the block became head and continuation).
TEST(ExpandMultiply, LoopStepsFollowTheSmallerOperand) {
  auto extraSteps = [](Op op, uint32_t a, uint32_t b) {
    const Program original = multiplyProgram(op, {"reg, reg"}, 0);
    Memory m{};
    for (uint32_t t = 0; t < kThreads; ++t) {
      m[t] = a;
      m[8 + t] = b;
    }
    return (runProgram(expanded(original), m).steps - runProgram(original, m).steps) / 2;  // two warps
  };
  EXPECT_EQ(extraSteps(Op::Mul, 0x12345678u, 5), 2);            // 1 loop step
  EXPECT_EQ(extraSteps(Op::Mul, 6, 0xffffffffu), 2);
  EXPECT_EQ(extraSteps(Op::Mul, 0xffffffffu, 0xfffffffeu), 12);  // 32 bits: 11 loop steps
  EXPECT_EQ(extraSteps(Op::MulHiU, 0x80808081u, 1000), 11);      // 10 bits: 10 loop steps
  EXPECT_EQ(extraSteps(Op::MulHiS, 0xffffffffu, 0xffffffffu), 33);
}

// A multiply in a loop with per-lane trip counts, in a divergent branch: x = x * a[t] + t for
// a[t] % 4 + 1 rounds, lanes with odd t only; the values worked here in plain C++.
TEST(ExpandMultiply, InADivergentLoopWithPerLaneTripCounts) {
  Program p;
  p.name = "mul_loop";
  Block b0;  // r1 = 4t, r2 = a[t], r3 = a[t] % 4 + 1, r5 = 1; odd t → B1, else B2
  b0.ops = {alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)), ld(2, 0), alu(Op::And, 3, R(2), I(3)),
            alu(Op::Add, 3, R(3), I(1)), alu(Op::Mov, 5, I(1)), alu(Op::And, 6, Operand::s(Special::TidX), I(1)),
            cmp(Op::SetNe, 0, R(6), I(0))};
  b0.term = machine::build::br(0, 1, 2);
  Block b1;  // r5 = r5 * r2 + t; loop while --r3
  b1.ops = {alu(Op::Mad, 5, R(5), R(2), Operand::s(Special::TidX)), alu(Op::Sub, 3, R(3), I(1)),
            cmp(Op::SetNe, 0, R(3), I(0))};
  b1.term = machine::build::br(0, 1, 2);
  Block b2;
  b2.ops = {st(kOut, R(5))};
  b2.term.kind = machine::TermKind::Exit;
  p.blocks = {b0, b1, b2};
  Memory m{};
  const std::array<uint32_t, kThreads> a = {5, 0xfffffffbu, 7, 12345, 3, 0x10001u, 2, 0xffffu};
  for (uint32_t t = 0; t < kThreads; ++t) m[t] = a[t];
  const Memory got = runProgram(expanded(p), m).global;
  for (uint32_t t = 0; t < kThreads; ++t) {
    uint32_t x = 1;
    if (t & 1)
      for (uint32_t r = 0; r < a[t] % 4 + 1; ++r) x = x * a[t] + t;
    EXPECT_EQ(got[24 + t], x) << "lane " << t;
  }
}

TEST(ExpandMultiply, IntoR0IsDeleted) {
  Program p = multiplyProgram(Op::Mul, {"reg, reg"}, 0);
  p.blocks[0].ops[7].dst = 0;
  p.blocks[0].ops[8] = st(kOut, R(0));
  ExpandMultiplyStats s;
  expanded(p, &s);
  EXPECT_EQ(s.removed, 1);
  EXPECT_EQ(s.loops + s.chains, 0);
}

// highOnly (the circuit target's): mul and mad, into a register or r0, stay as they are; mulhi.u
// and mulhi.s become straight code (the halves) whose results equal the native ones on the edge
// triples.
TEST(ExpandMultiply, HighOnlyLeavesMulAndMadAndExpandsMulhi) {
  ExpandMultiplyOptions o;
  o.highOnly = true;
  for (Op op : kMulOps) {
    SCOPED_TRACE(machine::opInfo(op).mnemonic);
    Program p = multiplyProgram(op, {"reg, reg"}, 0);
    Program r0 = p;
    r0.blocks[0].ops[7].dst = 0;
    for (const Program& in : {p, r0}) {
      ExpandMultiplyStats stats;
      auto e = expandMultiply(in, o, &stats);
      ASSERT_TRUE(e.ok()) << e.error().str();
      if (op == Op::Mul || op == Op::Mad) {
        EXPECT_EQ(*e, in);
        EXPECT_EQ(stats.loops + stats.chains + stats.removed, 0);
        continue;
      }
      EXPECT_FALSE(hasMultiplyHigh(*e));
      const std::vector<Inputs> inputs = edgeInputs();
      for (size_t first = 0; first < inputs.size(); first += kThreads) {
        Memory m{};
        for (uint32_t t = 0; t < kThreads; ++t) {
          const Inputs& x = inputs[first + t];
          m[t] = x.a;
          m[8 + t] = x.b;
          m[16 + t] = x.c;
        }
        EXPECT_EQ(runProgram(*e, m).global, runProgram(in, m).global) << "inputs from " << first;
      }
    }
  }
}

// highOnly's halves: mulhi.u and mulhi.s through the target's own mul and mad, on every edge pair
// and 4,000 random pairs per shape, and on the compilers' magic constants as immediates.
TEST(ExpandMultiply, HalvesEqualEvalAluInEveryShape) {
  uint32_t seed = 20261206;
  for (Op op : {Op::MulHiU, Op::MulHiS})
    for (const Shape& s : kShapes) {
      if (s.dst == Shape::IntoC) continue;
      SCOPED_TRACE(std::string(machine::opInfo(op).mnemonic) + " " + s.name);
      EXPECT_EQ(check(op, s, edgeInputs(), 0xfffffffdu, highOnly()), 256u);
      EXPECT_EQ(check(op, s, randomInputs(seed++, 4000), 0x9e3779b9u, highOnly()), 4000u);
    }
  const Shape onB{"reg, imm", Shape::Fresh, false, true};
  const Shape onA{"imm, reg", Shape::Fresh, true, false};
  for (uint32_t k :
       {0u, 1u, 0xffffu, 0x10000u, 0x80808081u, 0xaaaaaaabu, 0x92492493u, 0x80000000u, 0xffffffffu})
    for (Op op : {Op::MulHiU, Op::MulHiS}) {
      SCOPED_TRACE(std::string(machine::opInfo(op).mnemonic) + " by " + std::to_string(k));
      EXPECT_EQ(check(op, onB, randomInputs(k, 256), k, highOnly()), 256u);
      EXPECT_EQ(check(op, onA, randomInputs(k + 1, 256), k, highOnly()), 256u);
    }
}

// The halves' shape: straight code whose only multiplies are mul and mad, over the block split as
// the records need, a step more per new block whatever the operands (no loop); two immediates
// folded. Here 7 ops before the multiply and 3 after: the head takes 9 of the body's records;
// mulhi.u's other 11 fit the continuation with the 3 (2 blocks), mulhi.s's 17 do not (3 blocks).
TEST(ExpandMultiply, HalvesAreStraightCodeOfAStepPerBlock) {
  for (Op op : {Op::MulHiU, Op::MulHiS}) {
    SCOPED_TRACE(machine::opInfo(op).mnemonic);
    const Program original = multiplyProgram(op, {"reg, reg"}, 0);
    ExpandMultiplyStats stats;
    const Program after = expanded(original, &stats, highOnly());
    EXPECT_EQ(stats.halves, 1);
    EXPECT_EQ(stats.loops + stats.chains, 0);
    const int blocks = op == Op::MulHiU ? 2 : 3;
    EXPECT_EQ(stats.blocksAfter, blocks);
    int products = 0;
    for (const Block& b : after.blocks)
      for (const Instr& in : b.ops) products += in.op == Op::Mul || in.op == Op::Mad ? 1 : 0;
    EXPECT_EQ(products, 4);
    for (uint32_t v : {0u, 1u, 0xffffffffu}) {
      Memory m{};
      for (uint32_t t = 0; t < kThreads; ++t) m[t] = m[8 + t] = v;
      EXPECT_EQ(runProgram(after, m).steps - runProgram(original, m).steps, 2 * (blocks - 1))
          << v;  // two warps
    }
  }
  Program both = multiplyProgram(Op::MulHiS, {"imm, imm", Shape::Fresh, true, true}, 0x80000001u);
  Memory m{};
  const Memory got = runProgram(expanded(both, nullptr, highOnly()), m).global;
  const uint32_t want = oracle::evalAlu(Op::MulHiS, 0x80000001u, 0x80000001u, 0).value();
  for (uint32_t t = 0; t < kThreads; ++t) EXPECT_EQ(got[24 + t], want);
}

// The halves with every register but one live across a guarded mulhi.s into its own operand (3
// registers and a saved guard needed, 1 dead): the other 3 are borrowed through spill slots past
// the program's one, and every live value and the result come out as worked here.
TEST(ExpandMultiply, HalvesBorrowLiveRegistersThroughSpillSlots) {
  Program p;
  p.name = "pressure";
  p.spillSlots = 1;
  Block b0;  // r1 = 4t, r2 = a[t], r3 = b[t], r4..r14 = a[t] + k
  b0.ops = {alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)), ld(2, 0), ld(3, kB)};
  for (uint8_t r = 4; r <= 14; ++r) b0.ops.push_back(alu(Op::Add, r, R(2), I(r)));
  b0.term = machine::build::jmp(1);
  Block b1;  // @(a odd) r2 = mulhi.s(r2, r3); out[t] = r2; r15 = odd ? 11 : 22
  b1.ops = {alu(Op::And, 15, R(2), I(1)), cmp(Op::SetNe, 1, R(15), I(0)),
            alu(Op::MulHiS, 2, R(2), R(3))};
  b1.ops.back().guard = {1, false};
  b1.ops.push_back(readGuard(15));
  b1.ops.push_back(st(kOut, R(2)));
  b1.term = machine::build::jmp(2);
  Block b2;  // out2[t] = r15 + Σ r4..r14, b[t] stored back
  for (uint8_t r = 4; r <= 14; ++r) b2.ops.push_back(alu(Op::Add, 15, R(15), R(r)));
  b2.ops.push_back(st(kOut + 4 * 32, R(15)));
  b2.ops.push_back(st(kB, R(3)));
  b2.term.kind = machine::TermKind::Exit;
  p.blocks = {b0, b1, b2};
  ASSERT_TRUE(machine::verify(p).ok()) << machine::verify(p).error().str();
  const Program after = expanded(p, nullptr, highOnly());
  EXPECT_EQ(after.spillSlots, 4);
  const std::vector<Inputs> inputs = randomInputs(20261207, 256);
  for (size_t first = 0; first < inputs.size(); first += kThreads) {
    Memory m{};
    for (uint32_t t = 0; t < kThreads; ++t) {
      m[t] = inputs[first + t].a;
      m[8 + t] = inputs[first + t].b;
    }
    const Memory got = runProgram(after, m).global;
    for (uint32_t t = 0; t < kThreads; ++t) {
      const uint32_t a = m[t], b = m[8 + t];
      const bool odd = (a & 1) != 0;
      uint32_t sum = odd ? 11u : 22u;
      for (uint32_t k = 4; k <= 14; ++k) sum += a + k;
      EXPECT_EQ(got[24 + t], odd ? oracle::evalAlu(Op::MulHiS, a, b, 0).value() : a)
          << a << " " << b;
      EXPECT_EQ(got[56 + t], sum) << "lane " << t;
      EXPECT_EQ(got[8 + t], b) << "lane " << t;
    }
  }
}

// Every register live across the multiply: OverLimit naming the op and its PTX line; the twin
// with one register fewer in use expands.
TEST(ExpandMultiply, RefusesWithoutDeadRegistersAndNamesTheLine) {
  auto program = [](int live) {
    Block blk;
    blk.ops.push_back(alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)));
    for (uint8_t r = 2; r < 2 + live; ++r) blk.ops.push_back(alu(Op::Add, r, R(1), I(r)));
    blk.ops.push_back(alu(Op::Mul, 2, R(2), R(3)));
    Instr sum = alu(Op::Add, 1, R(1), R(2));
    blk.ops.push_back(sum);
    for (uint8_t r = 3; r < 2 + live; ++r) blk.ops.push_back(alu(Op::Add, 1, R(1), R(r)));
    Program p;
    p.name = "full";
    // 14 registers r1..r14 live after the mul: over 16 records (the mul writes two, trace v6),
    // so across three blocks, the store in the last.
    Block first;
    first.ops.assign(blk.ops.begin(), blk.ops.begin() + 1 + live);
    first.term = machine::build::jmp(1);
    Block second;
    second.ops.assign(blk.ops.begin() + 1 + live, blk.ops.end());
    second.term = machine::build::jmp(2);
    Block third;
    third.ops.push_back(machine::build::st(machine::Space::Global, R(0), R(1), 0));
    third.term.kind = machine::TermKind::Exit;
    p.blocks = {first, second, third};
    return p;
  };
  const Program full = program(14);
  ASSERT_TRUE(machine::verify(full).ok()) << machine::verify(full).error().str();
  std::vector<std::vector<SourceLoc>> locs(3);
  for (size_t b = 0; b < 3; ++b)
    for (size_t i = 0; i < full.blocks[b].ops.size(); ++i) locs[b].push_back(SourceLoc{"k.ptx", static_cast<uint32_t>(40 + i), 1});
  ExpandMultiplyOptions o;
  o.opLocs = &locs;
  auto r = expandMultiply(full, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(r.error().message.find("expanding `mul r2, r2, r3` (block 1 op 0, PTX line 40) into a shift-add loop"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("registers that are dead there"), std::string::npos) << r.error().message;
  EXPECT_TRUE(expandMultiply(program(12)).ok());
}

TEST(ExpandMultiply, RefusesPastTheBlockLimit) {
  Program p;
  p.name = "many";
  for (int b = 0; b < machine::kMaxBlocks - 1; ++b) {
    Block blk;
    blk.ops = {alu(Op::Mov, 1, I(static_cast<uint32_t>(b)))};
    blk.term = machine::build::jmp(static_cast<uint8_t>(b + 1));
    p.blocks.push_back(blk);
  }
  Block last;
  last.ops = {alu(Op::Mul, 2, R(1), Operand::s(Special::TidX)),
              machine::build::st(machine::Space::Global, R(0), R(2), 0)};
  last.term.kind = machine::TermKind::Exit;
  p.blocks.push_back(last);
  auto r = expandMultiply(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(r.error().message.find("program blocks; the machine has 32"), std::string::npos) << r.error().message;
  p.blocks.erase(p.blocks.begin());  // 31 blocks: 33 after... still too many
  p.blocks.erase(p.blocks.begin());  // 30 blocks: 32 after the split
  for (size_t b = 0; b < p.blocks.size(); ++b)
    if (p.blocks[b].term.kind == machine::TermKind::Jump) p.blocks[b].term.next = static_cast<uint8_t>(b + 1);
  EXPECT_TRUE(expandMultiply(p).ok());
}

TEST(ExpandMultiply, InvalidInputIsItsOwnDiag) {
  Program p;  // no blocks
  auto r = expandMultiply(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ProgramInvalid);
}

}  // namespace
}  // namespace qgpu::lower
