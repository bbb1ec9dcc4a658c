// qgpu/host/lower/tests/expand_division_test.cpp — the division expansion (expand_division.h):
// tiny machine programs run by the interpreter before and after the pass, every result compared
// with oracle/semantics.h evalAlu computed here (never with the pass's own output), on every pair
// of edge values, 10,000 seeded random pairs and every operand shape; guarded and divergent
// divisions; a division in a loop with per-lane trip counts; the expanded programs verify; each
// over-limit case a typed OverLimit naming the op and its line, each with a twin that fits.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "host/lower/expand_division.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
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
using machine::TermKind;
using machine::Terminator;

constexpr std::array<Op, 4> kDivOps = {Op::DivU, Op::RemU, Op::DivS, Op::RemS};
constexpr uint32_t kThreads = 16;
// Memory layout of the test programs: a[16] at word 0, b[16] at word 16, one output array of 16
// words per division from word 32 (so at most 5 divisions: 32 + 80 <= 126).
constexpr int32_t kB = 64, kOut = 128;

using machine::build::alu;
using machine::build::cmp;
using machine::build::guard;
using machine::build::I;
using machine::build::R;
// The test programs' memory ops: global, the address in a register (oracle/tests/builder.h).
Instr ld(uint8_t dst, uint8_t addr, int32_t offset) { return machine::build::ld(machine::Space::Global, dst, R(addr), offset); }
Instr st(uint8_t addr, int32_t offset, Operand value) {
  return machine::build::st(machine::Space::Global, R(addr), value, offset);
}
Terminator jump(uint8_t to) { return machine::build::jmp(to); }
Terminator branch(uint8_t p, uint8_t taken, uint8_t next) { return machine::build::br(p, taken, next); }

// r1 = 4 * tid (the byte offset), r2 = a[tid], r3 = b[tid], r4 = 0x5a5a5a5a (a destination's old value).
void loadOperands(Block& b) {
  b.ops.push_back(alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)));
  b.ops.push_back(ld(2, 1, 0));
  b.ops.push_back(ld(3, 1, kB));
  b.ops.push_back(alu(Op::Mov, 4, I(0x5a5a5a5au)));
}

bool hasDivision(const Program& p) {
  for (const Block& b : p.blocks)
    for (const Instr& in : b.ops)
      if (isDivision(in.op)) return true;
  return false;
}

// How a division's operands are given: a = r2 (= a[t]) or an immediate, b = r3 (= b[t]), an
// immediate or %tid.x; the destination a fresh register or a's / b's own.
struct Shape {
  const char* name;
  enum { Fresh, IntoA, IntoB } dst = Fresh;
  bool aImm = false;
  bool bImm = false;
  bool bTid = false;
};

// For each thread t: r1 = 4t, r2 = a[t], r3 = b[t], then each op of `ops` with `shape`'s
// operands (aImm/bImm: the immediate `imm`), its result stored to out[k][t].
Program divisionProgram(const std::vector<Op>& ops, const Shape& shape, uint32_t imm = 0) {
  Program p;
  p.name = "div";
  for (size_t k = 0; k < ops.size(); ++k) {  // one block per op, in a chain of jumps
    Block blk;
    if (k == 0) blk.ops.push_back(alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)));
    blk.ops.push_back(ld(2, 1, 0));
    blk.ops.push_back(ld(3, 1, kB));
    const Operand a = shape.aImm ? I(imm) : R(2);
    const Operand b = shape.bImm ? I(imm) : shape.bTid ? Operand::s(Special::TidX) : R(3);
    const uint8_t dst = shape.dst == Shape::IntoA ? 2 : shape.dst == Shape::IntoB ? 3 : 4;
    blk.ops.push_back(alu(ops[k], dst, a, b));
    blk.ops.push_back(st(1, kOut + 64 * static_cast<int32_t>(k), R(dst)));
    blk.term = k + 1 < ops.size() ? jump(static_cast<uint8_t>(k + 1)) : Terminator{};
    p.blocks.push_back(blk);
  }
  return p;
}

using Memory = std::array<uint32_t, machine::kGlobalWords>;

Memory runProgram(const Program& p, const Memory& initial, uint32_t threads = kThreads) {
  machine::Launch launch;
  launch.blockX = threads;
  launch.global = initial;
  auto r = oracle::run(p, launch, oracle::RunOptions{100000, false});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  EXPECT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.str();
  return r->global;
}

Program expanded(const Program& p) {
  auto e = expandDivision(p);
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().str());
  if (!e.ok()) return p;
  EXPECT_FALSE(hasDivision(*e));
  EXPECT_TRUE(machine::verify(*e).ok());
  return *e;
}

uint32_t expect(Op op, uint32_t a, uint32_t b) { return oracle::evalAlu(op, a, b, 0).value(); }

// Runs `ops` with `shape` on the pairs (a[t], b[t]) 16 at a time, before and after the pass, and
// checks every output word against evalAlu and every input word unchanged. Returns the pairs run.
size_t checkPairs(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const Shape& shape,
                  uint32_t imm = 0) {
  const std::vector<Op> ops(kDivOps.begin(), kDivOps.end());
  const Program original = divisionProgram(ops, shape, imm);
  const Program after = expanded(original);
  size_t checked = 0;
  for (size_t first = 0; first < pairs.size(); first += kThreads) {
    Memory m{};
    for (uint32_t t = 0; t < kThreads; ++t) {
      const auto& [a, b] = pairs[(first + t) % pairs.size()];
      m[t] = a;
      m[16 + t] = b;
    }
    const Memory before = runProgram(original, m), now = runProgram(after, m);
    for (uint32_t t = 0; t < kThreads; ++t) {
      const uint32_t a = shape.aImm ? imm : m[t];
      const uint32_t b = shape.bImm ? imm : shape.bTid ? t : m[16 + t];
      for (size_t k = 0; k < ops.size(); ++k) {
        const uint32_t want = expect(ops[k], a, b);
        const size_t w = 32 + 16 * k + t;
        if (before[w] != want || now[w] != want) {  // the first wrong pair only
          ADD_FAILURE() << machine::opInfo(ops[k]).mnemonic << " 0x" << std::hex << a << ", 0x" << b << " ("
                        << shape.name << "): want 0x" << want << ", native 0x" << before[w] << ", expanded 0x"
                        << now[w];
          return checked;
        }
      }
      if (now[t] != m[t] || now[16 + t] != m[16 + t]) {
        ADD_FAILURE() << "an input word changed (" << shape.name << ", thread " << t << ")";
        return checked;
      }
    }
    checked += kThreads;
  }
  return checked;
}

const std::vector<uint32_t> kEdges = {0u,          1u,          2u,          3u,          7u,
                                      10u,         0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu,
                                      0xffffffffu, 0xfffffff6u, 0x12345678u, 0xfffffffdu, 0x40000000u};

std::vector<std::pair<uint32_t, uint32_t>> edgePairs() {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a : kEdges)
    for (uint32_t b : kEdges) pairs.emplace_back(a, b);
  return pairs;
}

// evalAlu's edge semantics as docs/machine.md §4 states them, worked by hand: the reference the
// pass is held to says what the ISA says.
TEST(ExpandDivision, ReferenceEdgesAreTheIsaOnes) {
  EXPECT_EQ(expect(Op::DivU, 7, 0), 0xffffffffu);
  EXPECT_EQ(expect(Op::RemU, 7, 0), 7u);
  EXPECT_EQ(expect(Op::DivS, 0xfffffff9u, 0), 1u);           // -7 / 0 = 1
  EXPECT_EQ(expect(Op::DivS, 7, 0), 0xffffffffu);            // 7 / 0 = -1
  EXPECT_EQ(expect(Op::RemS, 0xfffffff9u, 0), 0xfffffff9u);  // -7 % 0 = -7
  EXPECT_EQ(expect(Op::DivS, 0x80000000u, 0xffffffffu), 0x80000000u);
  EXPECT_EQ(expect(Op::RemS, 0x80000000u, 0xffffffffu), 0u);
  EXPECT_EQ(expect(Op::DivS, 0xfffffff9u, 2), 0xfffffffdu);  // -7 / 2 = -3 (toward zero)
  EXPECT_EQ(expect(Op::RemS, 0xfffffff9u, 2), 0xffffffffu);  // -7 % 2 = -1 (sign of a)
  EXPECT_EQ(expect(Op::RemS, 7, 0xfffffffeu), 1u);           // 7 % -2 = 1
  EXPECT_EQ(expect(Op::DivU, 0xffffffffu, 1), 0xffffffffu);
  EXPECT_EQ(expect(Op::DivU, 3, 7), 0u);
  EXPECT_EQ(expect(Op::RemU, 3, 7), 3u);
}

TEST(ExpandDivision, EveryEdgePairEqualsEvalAlu) {
  EXPECT_EQ(checkPairs(edgePairs(), {"reg, reg"}), 240u);  // 225 pairs, rounded up to 16
}

TEST(ExpandDivision, TenThousandRandomPairsEqualEvalAlu) {
  std::mt19937 rng(20260812);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  auto value = [&]() -> uint32_t {
    switch (rng() % 5) {
      case 0: return rng() % 64;                              // small
      case 1: return 0u - rng() % 64;                         // small negative
      case 2: return (1u << (rng() % 32)) + rng() % 3 - 1;    // near a power of two
      case 3: return rng() >> (rng() % 32);                   // any magnitude
      default: return rng();                                  // uniform
    }
  };
  for (int k = 0; k < 10000; ++k) pairs.emplace_back(value(), value());
  EXPECT_EQ(checkPairs(pairs, {"reg, reg"}), 10000u);
}

// Operand shapes: immediates (positive, negative, INT_MIN, 0), %tid.x, results into a's or b's
// own register (the pass must not read a clobbered operand).
TEST(ExpandDivision, EveryOperandShapeEqualsEvalAlu) {
  const auto pairs = edgePairs();
  for (uint32_t imm : {0u, 1u, 3u, 7u, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0xfffffffdu}) {
    checkPairs(pairs, {"reg, imm", Shape::Fresh, false, true}, imm);
    checkPairs(pairs, {"imm, reg", Shape::Fresh, true, false}, imm);
  }
  checkPairs(pairs, {"reg, %tid.x", Shape::Fresh, false, false, true});
  checkPairs(pairs, {"into a", Shape::IntoA});
  checkPairs(pairs, {"into b", Shape::IntoB});
}

// One division op at a time (the 4-op program shares registers): each op alone, both ways.
TEST(ExpandDivision, EachOpAloneEqualsEvalAlu) {
  const auto pairs = edgePairs();
  for (Op op : kDivOps) {
    const Program original = divisionProgram({op}, {"reg, reg"});
    const Program after = expanded(original);
    EXPECT_EQ(after.blocks.size(), 3u);
    for (size_t first = 0; first < pairs.size(); first += kThreads) {
      Memory m{};
      for (uint32_t t = 0; t < kThreads; ++t) {
        m[t] = pairs[(first + t) % pairs.size()].first;
        m[16 + t] = pairs[(first + t) % pairs.size()].second;
      }
      const Memory now = runProgram(after, m);
      for (uint32_t t = 0; t < kThreads; ++t) ASSERT_EQ(now[32 + t], expect(op, m[t], m[16 + t]));
    }
  }
}

// A guarded division: guard-false lanes keep the destination's old value; the guard and another
// predicate written before the division are read after it (saved across the split).
TEST(ExpandDivision, GuardedDivisionStaysGuarded) {
  for (Op op : kDivOps) {
    Program p;
    p.name = "guarded";
    Block b0;
    loadOperands(b0);
    b0.ops.push_back(alu(Op::And, 5, Operand::s(Special::TidX), I(1)));
    b0.ops.push_back(cmp(Op::SetEq, 3, R(5), I(0)));                 // p3: even threads
    b0.ops.push_back(cmp(Op::SetLtU, 6, Operand::s(Special::TidX), I(8)));  // p6: threads < 8
    b0.ops.push_back(guard(alu(op, 4, R(2), R(3)), 3));
    b0.ops.push_back(guard(alu(Op::Add, 4, R(4), I(1)), 6, true));    // reads p6 after the split
    b0.ops.push_back(st(1, kOut, R(4)));
    b0.term = Terminator{};
    p.blocks.push_back(b0);
    const Program after = expanded(p);
    Memory m{};
    for (uint32_t t = 0; t < kThreads; ++t) {
      m[t] = kEdges[t % kEdges.size()];
      m[16 + t] = kEdges[(t * 7 + 3) % kEdges.size()];
    }
    const Memory before = runProgram(p, m), now = runProgram(after, m);
    for (uint32_t t = 0; t < kThreads; ++t) {
      uint32_t want = t % 2 == 0 ? expect(op, m[t], m[16 + t]) : 0x5a5a5a5au;
      if (t >= 8) want += 1;
      ASSERT_EQ(before[32 + t], want) << t;
      ASSERT_EQ(now[32 + t], want) << machine::opInfo(op).mnemonic << " thread " << t;
    }
  }
}

// Divergence: only threads < 6 reach the dividing block (their active mask is partial), and
// thread counts that leave the last warp partial.
TEST(ExpandDivision, DivergentLanesAndPartialWarps) {
  for (Op op : kDivOps) {
    for (uint32_t threads : {16u, 7u, 1u}) {
      Program p;
      p.name = "divergent";
      Block b0, b1, b2;
      b0.ops.push_back(alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)));
      b0.ops.push_back(ld(2, 1, 0));
      b0.ops.push_back(ld(3, 1, kB));
      b0.ops.push_back(alu(Op::Mov, 4, I(77)));
      b0.ops.push_back(cmp(Op::SetLtU, 0, Operand::s(Special::TidX), I(6)));
      b0.term = branch(0, 1, 2);
      b1.ops.push_back(alu(op, 4, R(2), R(3)));
      b1.term = jump(2);
      b2.ops.push_back(st(1, kOut, R(4)));
      b2.term = Terminator{};
      p.blocks = {b0, b1, b2};
      const Program after = expanded(p);
      Memory m{};
      for (uint32_t t = 0; t < kThreads; ++t) {
        m[t] = kEdges[(t * 5 + 1) % kEdges.size()];
        m[16 + t] = kEdges[(t * 3 + 2) % kEdges.size()];
      }
      const Memory now = runProgram(after, m, threads);
      EXPECT_EQ(now, runProgram(p, m, threads));
      for (uint32_t t = 0; t < kThreads; ++t) {
        const uint32_t want = t >= threads ? 0u : t < 6 ? expect(op, m[t], m[16 + t]) : 77u;
        ASSERT_EQ(now[32 + t], want) << machine::opInfo(op).mnemonic << " thread " << t << " of " << threads;
      }
    }
  }
}

// Euclid with rem.u at the top of a loop block: each lane iterates a different number of times
// (the back edge targets the split block's head), the result from std::gcd.
TEST(ExpandDivision, DivisionInALoopWithPerLaneTripCounts) {
  Program p;
  p.name = "gcd";
  Block b0, b1, b2;
  b0.ops.push_back(alu(Op::Shl, 1, Operand::s(Special::TidX), I(2)));
  b0.ops.push_back(ld(2, 1, 0));
  b0.ops.push_back(ld(3, 1, kB));
  b0.ops.push_back(cmp(Op::SetEq, 0, R(3), I(0)));
  b0.term = branch(0, 2, 1);
  b1.ops.push_back(alu(Op::RemU, 4, R(2), R(3)));
  b1.ops.push_back(alu(Op::Mov, 2, R(3)));
  b1.ops.push_back(alu(Op::Mov, 3, R(4)));
  b1.ops.push_back(cmp(Op::SetNe, 0, R(3), I(0)));
  b1.term = branch(0, 1, 2);
  b2.ops.push_back(st(1, kOut, R(2)));
  b2.term = Terminator{};
  p.blocks = {b0, b1, b2};
  const Program after = expanded(p);
  Memory m{};
  const uint32_t as[16] = {12, 35, 1071, 0, 7, 0xffffffffu, 144, 17, 1u << 31, 100, 81, 5, 270, 9, 1, 6};
  const uint32_t bs[16] = {18, 14, 462, 9, 0, 0xfffffffeu, 89, 17, 1u << 20, 75, 27, 3, 192, 0, 1, 4};
  for (uint32_t t = 0; t < kThreads; ++t) {
    m[t] = as[t];
    m[16 + t] = bs[t];
  }
  const Memory now = runProgram(after, m);
  for (uint32_t t = 0; t < kThreads; ++t) ASSERT_EQ(now[32 + t], std::gcd(as[t], bs[t])) << t;
}

// q = a / b and r = a % b of the same operands in one block share one loop (divmod_*), guarded
// or not; a pair whose first result overwrites an operand does not (its twin: two loops).
TEST(ExpandDivision, ADivAndRemOfTheSameOperandsShareOneLoop) {
  const auto pairs = edgePairs();
  for (bool isSigned : {false, true})
    for (bool remFirst : {false, true})
      for (bool guarded : {false, true})
        for (bool intoOperand : {false, true}) {
          const Op divOp = isSigned ? Op::DivS : Op::DivU, remOp = isSigned ? Op::RemS : Op::RemU;
          Program p;
          p.name = "divmod";
          Block b0;
          loadOperands(b0);
          b0.ops.push_back(alu(Op::Mov, 5, I(0xa5a5a5a5u)));
          b0.ops.push_back(cmp(Op::SetNe, 2, R(3), I(7)));  // the guard: b != 7
          Instr first = alu(remFirst ? remOp : divOp, intoOperand ? 2 : 4, R(2), R(3));
          Instr second = alu(remFirst ? divOp : remOp, 5, R(2), R(3));
          if (guarded) {
            first = guard(first, 2);
            second = guard(second, 2);
          }
          b0.ops.push_back(first);
          b0.ops.push_back(alu(Op::Add, 6, R(intoOperand ? 2 : 4), I(1)));  // reads the first result
          b0.ops.push_back(second);
          b0.ops.push_back(st(1, kOut, R(intoOperand ? 2 : 4)));
          b0.ops.push_back(st(1, kOut + 64, R(5)));
          b0.ops.push_back(st(1, kOut + 128, R(6)));
          b0.term = Terminator{};
          p.blocks.push_back(b0);
          ExpandDivisionStats stats;
          auto e = expandDivision(p, {}, &stats);
          ASSERT_TRUE(e.ok()) << e.error().str();
          const std::string what = std::string(isSigned ? "signed" : "unsigned") + (remFirst ? ", rem first" : "") +
                                   (guarded ? ", guarded" : "") + (intoOperand ? ", into a" : "");
          EXPECT_EQ(stats.expanded, 2) << what;
          EXPECT_EQ(stats.fused, intoOperand ? 0 : 1) << what;
          EXPECT_EQ(e->blocks.size(), intoOperand ? 5u : 3u) << what;
          for (size_t firstPair = 0; firstPair < pairs.size(); firstPair += kThreads) {
            Memory m{};
            for (uint32_t t = 0; t < kThreads; ++t) {
              m[t] = pairs[(firstPair + t) % pairs.size()].first;
              m[16 + t] = pairs[(firstPair + t) % pairs.size()].second;
            }
            const Memory before = runProgram(p, m), now = runProgram(*e, m);
            for (uint32_t t = 0; t < kThreads; ++t) {
              const uint32_t a = m[t], b = m[16 + t];
              const bool on = !guarded || b != 7;
              const Op firstOp = remFirst ? remOp : divOp, secondOp = remFirst ? divOp : remOp;
              const uint32_t r1 = on ? expect(firstOp, a, b) : intoOperand ? a : 0x5a5a5a5au;
              const uint32_t r2 = on ? expect(secondOp, intoOperand ? r1 : a, b) : 0xa5a5a5a5u;
              ASSERT_EQ(before[32 + t], r1) << what;
              ASSERT_EQ(now[32 + t], r1) << what << " 0x" << std::hex << a << ", 0x" << b;
              ASSERT_EQ(now[48 + t], r2) << what << " 0x" << std::hex << a << ", 0x" << b;
              ASSERT_EQ(now[64 + t], r1 + 1) << what;
            }
          }
        }
}

TEST(ExpandDivision, ADivisionIntoR0IsRemoved) {
  Program p = divisionProgram({Op::DivS}, {"reg, reg"});
  p.blocks[0].ops[3].dst = 0;
  p.blocks[0].ops[4].src[1] = I(5);
  ExpandDivisionStats stats;
  auto e = expandDivision(p, {}, &stats);
  ASSERT_TRUE(e.ok()) << e.error().str();
  EXPECT_EQ(stats.removed, 1);
  EXPECT_EQ(stats.expanded, 0);
  EXPECT_EQ(e->blocks.size(), 1u);
  EXPECT_EQ(e->blocks[0].ops.size(), p.blocks[0].ops.size() - 1);
}

TEST(ExpandDivision, CostPerDivisionIsTwoBlocksAndEighteenSteps) {
  for (Op op : kDivOps) {
    const Program p = divisionProgram({op}, {"reg, reg"});
    ExpandDivisionStats stats;
    auto e = expandDivision(p, {}, &stats);
    ASSERT_TRUE(e.ok()) << e.error().str();
    EXPECT_EQ(stats.expanded, 1);
    EXPECT_EQ(stats.blocksAfter - stats.blocksBefore, 2);
    machine::Launch launch;
    launch.blockX = 4;  // one warp
    auto before = oracle::run(p, launch), after = oracle::run(*e, launch);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_EQ(before->blockExecs, 1u);
    EXPECT_EQ(after->blockExecs, 18u);  // head, 16 loop steps, continuation
    // setup 3 + the loop's 12 ops - the division; signed: + |b| and the sign fix-ups
    const int extra = stats.opsAfter - stats.opsBefore;
    const bool isSigned = op == Op::DivS || op == Op::RemS;
    EXPECT_EQ(extra, isSigned ? (op == Op::DivS ? 3 + 1 + 12 + 4 : 3 + 1 + 12 + 2) - 1 : 3 + 12 - 1)
        << machine::opInfo(op).mnemonic;
  }
}

// ---- Over the limits: typed errors naming the op and its line, each with a twin that fits ----

std::vector<std::vector<SourceLoc>> locsOf(const Program& p, uint32_t line) {
  std::vector<std::vector<SourceLoc>> locs;
  for (const Block& b : p.blocks) locs.emplace_back(b.ops.size(), SourceLoc{"k.ptx", line, 1});
  return locs;
}

void expectOverLimit(const Program& p, const std::string& op, const std::string& why) {
  auto locs = locsOf(p, 42);
  ExpandDivisionOptions options;
  options.opLocs = &locs;
  auto e = expandDivision(p, options);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::OverLimit);
  EXPECT_EQ(e.error().loc.line, 42u);
  EXPECT_NE(e.error().message.find(op), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("PTX line 42"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find(why), std::string::npos) << e.error().message;
}

// `blocks` blocks in a chain of jumps; the last divides.
Program chain(int blocks) {
  Program p = divisionProgram({Op::DivU}, {"reg, reg"});
  Block last = p.blocks[0];
  p.blocks.clear();
  for (int k = 0; k + 1 < blocks; ++k) p.blocks.push_back(Block{{}, jump(static_cast<uint8_t>(k + 1))});
  p.blocks.push_back(last);
  return p;
}

TEST(ExpandDivision, RefusesMoreThan32Blocks) {
  expectOverLimit(chain(31), "div.u r4, r2, r3", "33 program blocks");
  EXPECT_TRUE(expandDivision(chain(30)).ok());  // twin: 32 blocks fit
}

Program withOpsBefore(int n) {
  Program p = divisionProgram({Op::DivU}, {"reg, reg"});
  auto& ops = p.blocks[0].ops;
  ops.erase(ops.begin() + 4);  // the store: the division is the last op
  while (static_cast<int>(ops.size()) < n + 1) ops.insert(ops.begin() + 1, alu(Op::Add, 5, R(5), I(1)));
  return p;
}

TEST(ExpandDivision, RefusesAHeadOverSixteenOps) {
  expectOverLimit(withOpsBefore(14), "div.u r4, r2, r3", "17 records in one block");
  EXPECT_TRUE(expandDivision(withOpsBefore(13)).ok());  // twin: 13 + 3 setup = 16
}

Program withOpsAfter(int n) {
  Program p = divisionProgram({Op::DivS}, {"reg, reg"});
  auto& ops = p.blocks[0].ops;
  ops[3].guard = machine::Guard{0, false};  // guarded: the result needs a mov, the guard a reload
  ops.insert(ops.begin() + 3, cmp(Op::SetNe, 0, R(2), I(0)));
  while (static_cast<int>(ops.size()) - 5 < n) ops.push_back(st(1, kOut, R(4)));
  return p;
}

TEST(ExpandDivision, RefusesAContinuationOverSixteenOps) {
  // 1 reload + 4 sign fix-ups + the guarded mov + the 11 ops after it
  expectOverLimit(withOpsAfter(11), "@p0 div.s r4, r2, r3", "17 records in one block");
  EXPECT_TRUE(expandDivision(withOpsAfter(10)).ok());
}

// r1..r`liveAfter` hold values read after the division (15: no register is dead there).
Program allLive(int liveAfter) {
  Program p;
  p.name = "full";
  Block b0, b1;
  for (uint8_t r = 1; r <= 15; ++r) b0.ops.push_back(alu(Op::Mov, r, I(r)));
  b0.term = jump(1);
  b1.ops.push_back(alu(Op::DivU, 4, R(2), R(3)));
  for (uint8_t r = 1; r <= liveAfter; ++r) b1.ops.push_back(st(0, 4 * r, R(r)));
  b1.term = Terminator{};
  p.blocks = {b0, b1};
  return p;
}

TEST(ExpandDivision, RefusesWhenNoRegistersAreFree) {
  expectOverLimit(allLive(15), "div.u r4, r2, r3", "registers that are dead there");
  EXPECT_TRUE(expandDivision(allLive(13)).ok());  // twin: r14, r15 dead, r4 is the result
}

// Lowered PTX: LowerStats::opLocs names the division's PTX line, and the refusal (here: the ROM
// is full) carries it.
TEST(ExpandDivision, ALoweredDivisionsRefusalNamesItsPtxLine) {
  const std::string text =
      ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k(.param .u64 buf)\n{\n"
      ".reg .b32 %r<8>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [buf];\ncvta.to.global.u64 %rd1, %rd1;\n"
      "ld.global.u32 %r1, [%rd1];\nld.global.u32 %r2, [%rd1+4];\ndiv.s32 %r3, %r1, %r2;\n"
      "st.global.u32 [%rd1+8], %r3;\nret;\n}\n";
  const uint32_t divLine = 12;  // counted by hand: the 12th line holds div.s32
  auto module = ptx::parse(text, "k.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions options;
  options.params = {0};
  LowerStats stats;
  auto program = lower(*module, options, &stats);
  ASSERT_TRUE(program.ok()) << program.error().str();
  ASSERT_EQ(stats.opLocs.size(), program->blocks.size());
  bool found = false;
  for (size_t b = 0; b < program->blocks.size(); ++b) {
    ASSERT_EQ(stats.opLocs[b].size(), program->blocks[b].ops.size());
    for (size_t i = 0; i < program->blocks[b].ops.size(); ++i)
      if (program->blocks[b].ops[i].op == Op::DivS) {
        EXPECT_EQ(stats.opLocs[b][i].line, divLine);
        found = true;
      }
  }
  ASSERT_TRUE(found);
  ExpandDivisionOptions expandOptions;
  expandOptions.opLocs = &stats.opLocs;
  EXPECT_TRUE(expandDivision(*program, expandOptions).ok());  // the twin: it fits as it is
  Program full = *program;
  auto locs = stats.opLocs;
  while (full.blocks.size() < 31) {  // unreachable exit blocks fill the ROM
    full.blocks.push_back(Block{});
    locs.emplace_back();
  }
  expandOptions.opLocs = &locs;
  auto refused = expandDivision(full, expandOptions);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::OverLimit);
  EXPECT_EQ(refused.error().loc.file, "k.ptx");
  EXPECT_EQ(refused.error().loc.line, divLine);
  EXPECT_NE(refused.error().message.find("PTX line 12"), std::string::npos) << refused.error().message;
}

TEST(ExpandDivision, RefusesAProgramThatDoesNotVerify) {
  Program p = divisionProgram({Op::DivU}, {"reg, reg"});
  p.blocks[0].ops[3].src[2] = I(1);  // a third source on a 2-source op
  auto e = expandDivision(p);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::ProgramInvalid);
}

}  // namespace
}  // namespace qgpu::lower
