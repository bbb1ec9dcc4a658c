// Tests for oracle/interpreter.cpp: the machine's semantics on hand-built programs.
// Every expected value is worked out by hand in the comments (never computed by the interpreter).
#include "oracle/interpreter.h"

#include <gtest/gtest.h>

#include <climits>

#include "oracle/tests/builder.h"
#include "oracle/trace.h"

namespace qgpu::oracle {
namespace {

using namespace machine;
using namespace machine::build;

RunResult runOk(const Program& p, const Launch& l, const RunOptions& o = {}) {
  auto r = run(p, l, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  return std::move(r).value();
}

// One thread computes `op a, b, c` into r1 and stores it to global word 0.
uint32_t evalAlu(Op op, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  const int n = opInfo(op).numSources;
  Instr in = alu(op, 1, I(a), n > 1 ? I(b) : Operand{}, n > 2 ? I(c) : Operand{});
  Program p{"alu", {block({in, st(Space::Global, I(0), R(1))}, exitTerm())}, 0, 0};
  RunResult r = runOk(p, launch(1, 1));
  EXPECT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  return r.global[0];
}

struct AluCase {
  Op op;
  uint32_t a, b, c, want;
};

TEST(Interpreter, AluOpsMatchHandWorkedValues) {
  const uint32_t kMin = 0x80000000u;
  const AluCase cases[] = {
      {Op::Mov, 42, 0, 0, 42},
      {Op::Add, 5, 7, 0, 12},
      {Op::Add, 0xffffffffu, 1, 0, 0},
      {Op::Sub, 3, 5, 0, 0xfffffffeu},
      {Op::Mul, 0x10000, 0x10000, 0, 0},
      {Op::Mul, 7, static_cast<uint32_t>(-3), 0, static_cast<uint32_t>(-21)},
      {Op::MulHiU, 0xffffffffu, 0xffffffffu, 0, 0xfffffffeu},  // (2^32-1)^2 = 2^64 - 2^33 + 1
      {Op::MulHiS, 0xffffffffu, 0xffffffffu, 0, 0},            // -1 * -1 = 1
      {Op::MulHiS, kMin, 2, 0, 0xffffffffu},                   // -2^32: high word -1
      {Op::Mad, 3, 4, 5, 17},
      {Op::DivU, 7, 2, 0, 3},
      {Op::DivU, 7, 0, 0, 0xffffffffu},
      {Op::DivS, static_cast<uint32_t>(-7), 2, 0, static_cast<uint32_t>(-3)},  // toward zero
      {Op::DivS, 7, 0, 0, 0xffffffffu},
      {Op::DivS, static_cast<uint32_t>(-7), 0, 0, 1},
      {Op::DivS, kMin, 0xffffffffu, 0, kMin},
      {Op::RemU, 7, 3, 0, 1},
      {Op::RemU, 7, 0, 0, 7},
      {Op::RemS, static_cast<uint32_t>(-7), 2, 0, static_cast<uint32_t>(-1)},  // sign of a
      {Op::RemS, 7, static_cast<uint32_t>(-2), 0, 1},
      {Op::RemS, 5, 0, 0, 5},
      {Op::RemS, kMin, 0xffffffffu, 0, 0},
      {Op::Neg, 5, 0, 0, static_cast<uint32_t>(-5)},
      {Op::Neg, kMin, 0, 0, kMin},
      {Op::Abs, static_cast<uint32_t>(-5), 0, 0, 5},
      {Op::Abs, kMin, 0, 0, kMin},
      {Op::MinS, 0xffffffffu, 1, 0, 0xffffffffu},
      {Op::MinU, 0xffffffffu, 1, 0, 1},
      {Op::MaxS, 0xffffffffu, 1, 0, 1},
      {Op::MaxU, 0xffffffffu, 1, 0, 0xffffffffu},
      {Op::And, 0xf0f0, 0xff00, 0, 0xf000},
      {Op::Or, 0xf0f0, 0xff00, 0, 0xfff0},
      {Op::Xor, 0xf0f0, 0xff00, 0, 0x0ff0},
      {Op::Not, 0, 0, 0, 0xffffffffu},
      {Op::Shl, 1, 31, 0, kMin},
      {Op::Shl, 1, 32, 0, 0},
      {Op::Shl, 1, 0xffffffffu, 0, 0},
      {Op::ShrU, kMin, 31, 0, 1},
      {Op::ShrU, kMin, 32, 0, 0},
      {Op::ShrS, kMin, 31, 0, 0xffffffffu},
      {Op::ShrS, kMin, 40, 0, 0xffffffffu},
      {Op::ShrS, 0x40000000, 40, 0, 0},
      {Op::ShrS, static_cast<uint32_t>(-8), 1, 0, static_cast<uint32_t>(-4)},
      {Op::Popc, 0xff00ff00u, 0, 0, 16},
      {Op::Popc, 0, 0, 0, 0},
      {Op::Clz, 0, 0, 0, 32},
      {Op::Clz, 1, 0, 0, 31},
      {Op::Clz, kMin, 0, 0, 0},
      {Op::Brev, 1, 0, 0, kMin},
      {Op::Brev, 6, 0, 0, 0x60000000},
      {Op::Bfind, 0, 0, 0, 0xffffffffu},
      {Op::Bfind, 1, 0, 0, 0},
      {Op::Bfind, kMin, 0, 0, 31},
      {Op::Bfind, 0x10000, 0, 0, 16},
      {Op::BfeU, 0xabcd1234u, 4, 8, 0x23},   // 0x0abcd123 & 0xff
      {Op::BfeU, 0xabcd1234u, 28, 8, 0xa},   // only bits 28..31 exist
      {Op::BfeU, 0xabcd1234u, 32, 8, 0},     // pos beyond the word
      {Op::BfeU, 0xabcd1234u, 4, 0, 0},      // len 0
      {Op::BfeU, 0xff, 0x100, 0x104, 0xf},   // pos = b & 0xff = 0, len = c & 0xff = 4
      {Op::BfeS, 0xabcd1234u, 4, 8, 0x23},   // field 0010_0011: top bit 0
      {Op::BfeS, 0xf0, 4, 4, 0xffffffffu},   // field 1111: sign-filled
      {Op::BfeS, kMin, 28, 8, 0xfffffff8u},  // field 1000, sign a[31]
      {Op::BfeS, kMin, 4, 0, 0},             // len 0 gives 0
      {Op::BfeS, kMin, 40, 4, 0xffffffffu},  // pos >= 32: every bit is a[31]
      {Op::Prmt, 0x33221100, 0x77665544, 0x3210, 0x33221100},
      {Op::Prmt, 0x33221100, 0x77665544, 0x7654, 0x77665544},
      {Op::Prmt, 0x33221100, 0x77665544, 0x0123, 0x00112233},
      {Op::Prmt, 0x80, 0, 0x0008, 0x808080ffu},  // selector 8: sign of byte 0 replicated
      {Op::ShfLW, kMin, 1, 1, 3},                // (1 << 1) | (0x80000000 >> 31)
      {Op::ShfLW, kMin, 1, 0, 1},                // shift 0 gives b
      {Op::ShfLW, kMin, 1, 33, 3},               // c & 31 = 1
      {Op::ShfRW, 2, 1, 1, 0x80000001u},         // (2 >> 1) | (1 << 31)
      {Op::ShfRW, 2, 1, 32, 2},                  // shift 0 gives a
  };
  for (const AluCase& c : cases) {
    EXPECT_EQ(evalAlu(c.op, c.a, c.b, c.c), c.want)
        << opInfo(c.op).mnemonic << " " << c.a << ", " << c.b << ", " << c.c;
  }
}

// set p0 = a OP b; r1 = p0 ? 1 : 0.
uint32_t evalCmp(Op op, uint32_t a, uint32_t b) {
  Program p{"cmp",
            {block({cmp(op, 0, I(a), I(b)), selp(1, I(1), I(0), 0), st(Space::Global, I(0), R(1))},
                   exitTerm())},
            0,
            0};
  return runOk(p, launch(1, 1)).global[0];
}

TEST(Interpreter, ComparesAreSignedOrUnsignedAsNamed) {
  EXPECT_EQ(evalCmp(Op::SetEq, 3, 3), 1u);
  EXPECT_EQ(evalCmp(Op::SetNe, 3, 3), 0u);
  EXPECT_EQ(evalCmp(Op::SetLtS, 0xffffffffu, 1), 1u);  // -1 < 1
  EXPECT_EQ(evalCmp(Op::SetLtU, 0xffffffffu, 1), 0u);
  EXPECT_EQ(evalCmp(Op::SetLeS, 1, 1), 1u);
  EXPECT_EQ(evalCmp(Op::SetGtS, 0xffffffffu, 1), 0u);
  EXPECT_EQ(evalCmp(Op::SetGeS, 1, 1), 1u);
  EXPECT_EQ(evalCmp(Op::SetLeU, 2, 1), 0u);
  EXPECT_EQ(evalCmp(Op::SetGtU, 0xffffffffu, 1), 1u);
  EXPECT_EQ(evalCmp(Op::SetGeU, 0, 1), 0u);
}

TEST(Interpreter, PredicateLogic) {
  // p0 = 1, p1 = 0; B0 turns each result into r1..r5, B1 stores them to words 0..4.
  Block b0 = block({pconst(0, true), pconst(1, false), pop(Op::PAnd, 2, 0, 1),
                    pop(Op::POr, 3, 0, 1), pop(Op::PXor, 4, 0, 1), pop(Op::PNot, 5, 0),
                    pop(Op::PMov, 6, 1), selp(1, I(1), I(0), 2), selp(2, I(1), I(0), 3),
                    selp(3, I(1), I(0), 4), selp(4, I(1), I(0), 5), selp(5, I(1), I(0), 6)},
                   jmp(1));
  Block b1 = block(
      {st(Space::Global, I(0), R(1)), st(Space::Global, I(4), R(2)), st(Space::Global, I(8), R(3)),
       st(Space::Global, I(12), R(4)), st(Space::Global, I(16), R(5))},
      exitTerm());
  RunResult r = runOk(Program{"pred", {b0, b1}, 0, 0}, launch(1, 1));
  EXPECT_EQ(r.global[0], 0u);  // and
  EXPECT_EQ(r.global[1], 1u);  // or
  EXPECT_EQ(r.global[2], 1u);  // xor
  EXPECT_EQ(r.global[3], 0u);  // not p0
  EXPECT_EQ(r.global[4], 0u);  // mov p1
}

// if (tid < 2) r1 = 10; else r1 = 20; global[tid] = r1.
Program diamond() {
  return Program{"diamond",
                 {block({cmp(Op::SetLtU, 0, Tid(), I(2))}, br(0, 1, 2)),
                  block({alu(Op::Mov, 1, I(10))}, jmp(3)),
                  block({alu(Op::Mov, 1, I(20))}, jmp(3)),
                  block({alu(Op::Shl, 2, Tid(), I(2)), st(Space::Global, R(2), R(1))}, exitTerm())},
                 0,
                 0};
}

TEST(Interpreter, IfElseDiamondReconvergesUnderMinPc) {
  RunResult r = runOk(diamond(), launch(1, 4));
  ASSERT_EQ(r.status, RunStatus::Finished);
  EXPECT_EQ(r.global[0], 10u);
  EXPECT_EQ(r.global[1], 10u);
  EXPECT_EQ(r.global[2], 20u);
  EXPECT_EQ(r.global[3], 20u);
  // B0 (all), B1 (lanes 0,1), B2 (lanes 2,3), B3 (all, reconverged).
  EXPECT_EQ(r.blockExecs, 4u);
  // ops x active lanes: 1*4 + 1*2 + 1*2 + 2*4.
  EXPECT_EQ(r.laneInstrs, 16u);
}

TEST(Interpreter, LoopWithPerLaneTripCounts) {
  // r2 = tid + 1; do { r1 += r2; r2 -= 1; } while (r2 != 0); global[tid] = r1.
  // Lane t sums t+1 .. 1: 1, 3, 6, 10.
  Program p{"loop",
            {block({alu(Op::Add, 2, Tid(), I(1))}, jmp(1)),
             block({alu(Op::Add, 1, R(1), R(2)), alu(Op::Sub, 2, R(2), I(1)),
                    cmp(Op::SetNe, 0, R(2), I(0))},
                   br(0, 1, 2)),
             block({alu(Op::Shl, 3, Tid(), I(2)), st(Space::Global, R(3), R(1))}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  EXPECT_EQ(r.global[0], 1u);
  EXPECT_EQ(r.global[1], 3u);
  EXPECT_EQ(r.global[2], 6u);
  EXPECT_EQ(r.global[3], 10u);
  // B0 once, B1 with masks 1111, 1110, 1100, 1000, then B2 once with all lanes.
  EXPECT_EQ(r.blockExecs, 6u);
  auto events = trace::decodeRun(r.trace);
  ASSERT_TRUE(events.ok()) << events.error().str();
  std::vector<uint8_t> masks;
  for (const auto& e : *events) {
    if (auto* x = std::get_if<trace::Exec>(&e)) masks.push_back(x->mask);
  }
  EXPECT_EQ(masks, (std::vector<uint8_t>{0xf, 0xf, 0xe, 0xc, 0x8, 0xf}));
}

TEST(Interpreter, EveryRegisterWriteOutlivesItsBlock) {
  // B0 writes r1 and r2; both keep their values into B1 (there are no block-local reverts).
  Program p{"persist",
            {block({alu(Op::Mov, 2, I(7)), alu(Op::Add, 1, R(2), I(1))}, jmp(1)),
             block({st(Space::Global, I(0), R(1)), st(Space::Global, I(4), R(2))}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 1));
  EXPECT_EQ(r.global[0], 8u);  // 7 + 1, read within the block
  EXPECT_EQ(r.global[1], 7u);  // r2 written in B0, read in B1
}

TEST(Interpreter, RegisterZeroDiscardsWrites) {
  Program p{
      "r0", {block({alu(Op::Mov, 0, I(5)), st(Space::Global, I(0), R(0))}, exitTerm())}, 0, 0};
  EXPECT_EQ(runOk(p, launch(1, 1)).global[0], 0u);
}

TEST(Interpreter, GuardedOpsActOnlyWhereThePredicateHolds) {
  // Lanes 0,1: r1 = 1; lanes 2,3: r1 = 2.
  Program p{"guard",
            {block({cmp(Op::SetLtU, 0, Tid(), I(2)), guard(alu(Op::Mov, 1, I(1)), 0),
                    guard(alu(Op::Mov, 1, I(2)), 0, true), alu(Op::Shl, 3, Tid(), I(2)),
                    st(Space::Global, R(3), R(1))},
                   exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  EXPECT_EQ((std::array<uint32_t, 4>{r.global[0], r.global[1], r.global[2], r.global[3]}),
            (std::array<uint32_t, 4>{1, 1, 2, 2}));
}

// 4 threads: r1 = atom.OP global[0], b, c; global[1 + tid] = r1. Returns words 0..4.
std::array<uint32_t, 5> atomics(Op op, Operand b, Operand c = {}, uint32_t initial = 0) {
  Program p{"atom",
            {block({alu(Op::Add, 5, Tid(), I(1)), alu(Op::Sub, 6, Tid(), I(2)),
                    atom(op, Space::Global, 1, I(0), b, c), alu(Op::Shl, 3, Tid(), I(2)),
                    st(Space::Global, R(3), R(1), 4)},
                   exitTerm())},
            0,
            0};
  Launch l = launch(1, 4);
  l.global[0] = initial;
  RunResult r = runOk(p, l);
  return {r.global[0], r.global[1], r.global[2], r.global[3], r.global[4]};
}

TEST(Interpreter, AtomicsAreSerialisedInLaneOrder) {
  using A = std::array<uint32_t, 5>;
  const auto m2 = static_cast<uint32_t>(-2);
  // add tid+1: olds 0, 1, 3, 6; final 10.
  EXPECT_EQ(atomics(Op::AtomAdd, R(5)), (A{10, 0, 1, 3, 6}));
  // exch tid+1: olds 0, 1, 2, 3; final 4.
  EXPECT_EQ(atomics(Op::AtomExch, R(5)), (A{4, 0, 1, 2, 3}));
  // cas(compare tid, new tid+1): each lane finds its own tid: olds 0,1,2,3; final 4.
  EXPECT_EQ(atomics(Op::AtomCas, Tid(), R(5)), (A{4, 0, 1, 2, 3}));
  // inc bound 2: 0->1, 1->2, 2->0 (old >= 2), 0->1.
  EXPECT_EQ(atomics(Op::AtomInc, I(2)), (A{1, 0, 1, 2, 0}));
  // dec bound 2: 0->2 (old == 0), 2->1, 1->0, 0->2.
  EXPECT_EQ(atomics(Op::AtomDec, I(2)), (A{2, 0, 2, 1, 0}));
  // min.s with tid-2 = -2, -1, 0, 1: first lane sets -2, which stays.
  EXPECT_EQ(atomics(Op::AtomMinS, R(6)), (A{m2, 0, m2, m2, m2}));
  // max.u with tid-2 (as unsigned 0xfffffffe, 0xffffffff, 0, 1): final 0xffffffff.
  EXPECT_EQ(atomics(Op::AtomMaxU, R(6)), (A{0xffffffffu, 0, m2, 0xffffffffu, 0xffffffffu}));
  // and/or/xor on initial 0b1111 with tid+1 = 1, 2, 3, 4.
  EXPECT_EQ(atomics(Op::AtomAnd, R(5), {}, 0xf), (A{0, 0xf, 1, 0, 0}));
  EXPECT_EQ(atomics(Op::AtomOr, R(5), {}, 0x10), (A{0x17, 0x10, 0x11, 0x13, 0x13}));
  EXPECT_EQ(atomics(Op::AtomXor, R(5), {}, 0), (A{4, 0, 1, 3, 0}));
}

TEST(Interpreter, StoresToOneAddressLeaveTheHighestLane) {
  Program p{"st", {block({st(Space::Global, I(0), Tid())}, exitTerm())}, 0, 0};
  EXPECT_EQ(runOk(p, launch(1, 4)).global[0], 3u);
}

TEST(Interpreter, ByteStoresOfTheLanesOfOneWarpToOneWordAllSurvive) {
  // st.b8 [tid], tid + 0x1a0: lane l writes byte l = 0xa0 + l (the value's low byte); each lane
  // reads the word as the lanes before it left it, so word 0 = a3 a2 a1 a0. A word load / insert /
  // word store expansion would leave only lane 3's byte (0xa3000000).
  Program p{"bytes",
            {block({alu(Op::Add, 1, Tid(), I(0x1a0)), stSub(Op::StB8, Space::Global, Tid(), R(1))},
                   exitTerm())},
            0,
            0};
  Launch l = launch(1, 4);
  l.global[1] = 0x55555555;  // the next word is not touched
  RunResult r = runOk(p, l);
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  EXPECT_EQ(r.global[0], 0xa3a2a1a0u);
  EXPECT_EQ(r.global[1], 0x55555555u);
}

TEST(Interpreter, ByteStoresOfFourWarpsToOneWordAllSurvive) {
  // 16 threads; thread t = 4w + l writes its tid to byte w of word l (address 4l + w), in global
  // and in shared memory; word l holds bytes (l, 4 + l, 8 + l, 12 + l) from lane l of warps 0..3,
  // little-endian. After the barrier, warp 0 copies shared word l to global word 4 + l.
  Program p{"warps",
            {block({alu(Op::And, 1, Tid(), I(3)), alu(Op::Shl, 1, R(1), I(2)),
                    alu(Op::ShrU, 2, Tid(), I(2)), alu(Op::Add, 1, R(1), R(2)),
                    stSub(Op::StB8, Space::Global, R(1), Tid()),
                    stSub(Op::StB8, Space::Shared, R(1), Tid())},
                   bar(1)),
             block({cmp(Op::SetLtU, 0, Tid(), I(4)), alu(Op::Shl, 4, Tid(), I(2)),
                    guard(ld(Space::Shared, 3, R(4)), 0),
                    guard(st(Space::Global, R(4), R(3), 16), 0)},
                   exitTerm())},
            4,
            0};
  RunResult r = runOk(p, launch(1, 16));
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  const uint32_t want[4] = {0x0c080400u, 0x0d090501u, 0x0e0a0602u, 0x0f0b0703u};
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(r.global[static_cast<size_t>(l)], want[l]) << "global word " << l;
    EXPECT_EQ(r.global[static_cast<size_t>(4 + l)], want[l]) << "shared word " << l;
  }
}

TEST(Interpreter, HalfwordStoresInsertTheLow16BitsLaneByLane) {
  // Word 5 = 0x11223344. Lane 0: st.b16 [20], 0xbeef0001 -> 0x11220001; lane 1: [22],
  // 0xbeef0002 -> 0x00020001. Word 6 = 0x11223344, st.b8 [25] (byte 1), 0x777 -> 0x11227744.
  Program p{"halves",
            {block({alu(Op::Add, 1, Tid(), I(0xbeef0001u)), alu(Op::Shl, 2, Tid(), I(1)),
                    stSub(Op::StB16, Space::Global, R(2), R(1), 20),
                    stSub(Op::StB8, Space::Global, I(25), I(0x777))},
                   exitTerm())},
            0,
            0};
  Launch l = launch(1, 2);
  l.global[5] = 0x11223344;
  l.global[6] = 0x11223344;
  RunResult r = runOk(p, l);
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  EXPECT_EQ(r.global[5], 0x00020001u);
  EXPECT_EQ(r.global[6], 0x11227744u);
}

TEST(Interpreter, OddHalfwordStoreFaultsAndNoLaneStores) {
  // Addresses tid * 3 = 0, 3: lane 0's halfword at byte 0 is aligned, lane 1's at byte 3 is not:
  // as on a GPU (misaligned address), FAULT; op-level atomicity: lane 0 stores nothing either.
  Program p{"odd",
            {block({alu(Op::Mul, 1, Tid(), I(3)), stSub(Op::StB16, Space::Global, R(1), I(9))},
                   exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 2));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("lane 1 (thread 1)"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("byte address 3"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("not a multiple of 2"), std::string::npos) << r.fault.message;
  EXPECT_EQ(r.global[0], 0u);
}

TEST(Interpreter, ByteStoreAtAnOddAddressIsFineButPastTheEndFaults) {
  Program ok{"b", {block({stSub(Op::StB8, Space::Global, I(503), I(0xab))}, exitTerm())}, 0, 0};
  RunResult r = runOk(ok, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  EXPECT_EQ(r.global[125], 0xab000000u);  // byte 503 = byte 3 of the last word
  Program past{"b", {block({stSub(Op::StB8, Space::Global, I(504), I(1))}, exitTerm())}, 0, 0};
  r = runOk(past, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("global store at byte address 504"), std::string::npos)
      << r.fault.message;
}

// r1 = tid * 10; r2 = shfl.MODE r1, b, c (optionally only in lanes tid < 3); global[tid] = r2.
std::array<uint32_t, 4> shuffle(Op op, uint32_t b, uint32_t c, bool onlyFirstThree = false,
                                uint32_t threads = 4) {
  Instr sh = shfl(op, 2, R(1), I(b), I(c));
  if (onlyFirstThree) sh = guard(sh, 0);
  Program p{"shfl",
            {block({alu(Op::Mul, 1, Tid(), I(10)), cmp(Op::SetLtU, 0, Tid(), I(3)), sh,
                    alu(Op::Shl, 3, Tid(), I(2)), st(Space::Global, R(3), R(2))},
                   exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, threads));
  return {r.global[0], r.global[1], r.global[2], r.global[3]};
}

TEST(Interpreter, ShufflesFollowThePtxFormulaOnFourLanes) {
  using A = std::array<uint32_t, 4>;
  // Width 4 (c = 0x1c1f / 0x1c00): maxLane 3 for down/bfly/idx, 0 for up.
  EXPECT_EQ(shuffle(Op::ShflDown, 1, 0x1c1f), (A{10, 20, 30, 30}));
  EXPECT_EQ(shuffle(Op::ShflUp, 1, 0x1c00), (A{0, 0, 10, 20}));
  EXPECT_EQ(shuffle(Op::ShflBfly, 1, 0x1c1f), (A{10, 0, 30, 20}));
  EXPECT_EQ(shuffle(Op::ShflIdx, 2, 0x1c1f), (A{20, 20, 20, 20}));
  // Width 32 (c = 31): lanes 4..31 do not exist, so the caller keeps its own value.
  EXPECT_EQ(shuffle(Op::ShflDown, 2, 31), (A{20, 30, 20, 30}));
  EXPECT_EQ(shuffle(Op::ShflIdx, 5, 31), (A{0, 10, 20, 30}));
  EXPECT_EQ(shuffle(Op::ShflBfly, 2, 31), (A{20, 30, 0, 10}));
  // Up with c = 0: j = lane - 2 valid if j >= 0.
  EXPECT_EQ(shuffle(Op::ShflUp, 2, 0), (A{0, 10, 0, 10}));
  // Lane 3 does not take part (guard): lane 2 reading lane 3 keeps its own value; r2 of lane 3
  // stays 0.
  EXPECT_EQ(shuffle(Op::ShflDown, 1, 0x1c1f, true), (A{10, 20, 20, 0}));
  // A partial warp of 3 threads: lane 3 does not exist.
  EXPECT_EQ(shuffle(Op::ShflDown, 1, 0x1c1f, false, 3), (A{10, 20, 20, 0}));
}

TEST(Interpreter, VotesCoverTheOpsLanes) {
  // p0 = tid < 3 over 4 lanes: ballot 0b0111, any true, all false; under guard p0: all true.
  Program p{
      "vote",
      {block({cmp(Op::SetLtU, 0, Tid(), I(3)), ballot(1, 0), vote(Op::VoteAny, 1, 0),
              vote(Op::VoteAll, 2, 0), guard(vote(Op::VoteAll, 3, 0), 0), selp(2, I(1), I(0), 1),
              selp(3, I(1), I(0), 2), guard(selp(4, I(1), I(0), 3), 0),
              st(Space::Global, I(0), R(1)), st(Space::Global, I(4), R(2)),
              st(Space::Global, I(8), R(3)), guard(st(Space::Global, I(12), R(4)), 0)},
             exitTerm())},
      0,
      0};
  RunResult r = runOk(p, launch(1, 4));
  EXPECT_EQ(r.global[0], 7u);
  EXPECT_EQ(r.global[1], 1u);
  EXPECT_EQ(r.global[2], 0u);
  EXPECT_EQ(r.global[3], 1u);
}

TEST(Interpreter, BarrierOrdersSharedMemoryAcrossFourWarpsWithPartialLastWarp) {
  // 14 threads (warp 3 has 2 lanes): shared[tid] = tid + 1; barrier;
  // global[tid] = shared[(tid + 1) % 14]  ->  ((tid + 1) % 14) + 1.
  Program p{"bar",
            {block({alu(Op::Add, 1, Tid(), I(1)), alu(Op::Shl, 2, Tid(), I(2)),
                    st(Space::Shared, R(2), R(1))},
                   bar(1)),
             block({alu(Op::Add, 1, Tid(), I(1)), alu(Op::RemU, 1, R(1), S(Special::NtidX)),
                    alu(Op::Shl, 1, R(1), I(2)), ld(Space::Shared, 2, R(1)),
                    alu(Op::Shl, 3, Tid(), I(2)), st(Space::Global, R(3), R(2))},
                   exitTerm())},
            14,
            0};
  RunResult r = runOk(p, launch(1, 14));
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  for (uint32_t t = 0; t < 13; ++t) EXPECT_EQ(r.global[t], t + 2) << t;
  EXPECT_EQ(r.global[13], 1u);
  // Order: B0 for warps 0..3 (each stops at the barrier), then B1 for warps 0..3.
  auto events = trace::decodeRun(r.trace);
  ASSERT_TRUE(events.ok());
  std::vector<std::pair<int, int>> order;  // (block, warp)
  std::vector<uint8_t> masks;
  for (const auto& e : *events) {
    if (auto* x = std::get_if<trace::Exec>(&e)) {
      order.emplace_back(x->block, x->warp);
      masks.push_back(x->mask);
    }
  }
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{
                       {0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 3}}));
  EXPECT_EQ(masks[3], 0x3);  // the partial warp
}

TEST(Interpreter, WarpRunsUntilExitWithoutBarrier) {
  // Two warps, two blocks, no barrier: warp 0 runs B0, B1, then warp 1 runs B0, B1.
  Program p{"sched", {block({}, jmp(1)), block({}, exitTerm())}, 0, 0};
  RunResult r = runOk(p, launch(1, 8));
  auto events = trace::decodeRun(r.trace);
  ASSERT_TRUE(events.ok());
  std::vector<std::pair<int, int>> order;
  for (const auto& e : *events) {
    if (auto* x = std::get_if<trace::Exec>(&e)) order.emplace_back(x->block, x->warp);
  }
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
}

TEST(Interpreter, DivergentBarrierFaults) {
  Program p{"divbar",
            {block({cmp(Op::SetLtU, 0, Tid(), I(2))}, br(0, 1, 2)), block({}, bar(2)),
             block({}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  EXPECT_EQ(r.status, RunStatus::Fault);
  EXPECT_EQ(r.fault.kind, ErrorKind::MachineFault);
  EXPECT_NE(r.fault.message.find("divergent barrier"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("block 1"), std::string::npos) << r.fault.message;
  EXPECT_EQ(r.trace.back(), trace::single(trace::Family::FaultTok));
}

TEST(Interpreter, BranchToExitTargetEndsThoseLanesAtOnce) {
  // Lanes 2, 3 (tid >= 2) exit from B0's branch; lanes 0, 1 store tid + 5 in B1. The exited lanes
  // need no block of their own and do not hold up the barrier in B1.
  Program p{"exitbr",
            {block({cmp(Op::SetGeU, 0, Tid(), I(2))}, br(0, kExitTarget, 1)),
             block({alu(Op::Add, 1, Tid(), I(5)), alu(Op::Shl, 2, Tid(), I(2)),
                    st(Space::Global, R(2), R(1))},
                   bar(2)),
             block({}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  EXPECT_EQ(r.global[0], 5u);
  EXPECT_EQ(r.global[1], 6u);
  EXPECT_EQ(r.global[2], 0u);
  EXPECT_EQ(r.global[3], 0u);
  // B0 (all lanes), B1 (lanes 0,1), B2 (lanes 0,1): nothing ever runs for lanes 2, 3 again.
  EXPECT_EQ(r.blockExecs, 3u);
}

TEST(Interpreter, ExitTargetOnTheNotTakenSideToo) {
  // br !p: lanes where p fails take `taken`; here `next` is the exit for lanes 0, 1.
  Program p{"exitnext",
            {block({cmp(Op::SetGeU, 0, Tid(), I(2))}, br(0, 1, kExitTarget)),
             block({alu(Op::Shl, 2, Tid(), I(2)), st(Space::Global, R(2), I(9))}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  ASSERT_EQ(r.status, RunStatus::Finished) << r.fault.str();
  EXPECT_EQ(r.global[0], 0u);
  EXPECT_EQ(r.global[1], 0u);
  EXPECT_EQ(r.global[2], 9u);
  EXPECT_EQ(r.global[3], 9u);
}

TEST(Interpreter, MultiCtaRunsInOrderWithCtaid) {
  // global[ctaid * ntid + tid] = ctaid * 100 + tid, 3 CTAs x 2 threads.
  Program p{"grid",
            {block({alu(Op::Mad, 1, S(Special::CtaidX), S(Special::NtidX), Tid()),
                    alu(Op::Shl, 2, R(1), I(2)), alu(Op::Mad, 3, S(Special::CtaidX), I(100), Tid()),
                    st(Space::Global, R(2), R(3))},
                   exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(3, 2));
  EXPECT_EQ((std::array<uint32_t, 7>{r.global[0], r.global[1], r.global[2], r.global[3],
                                     r.global[4], r.global[5], r.global[6]}),
            (std::array<uint32_t, 7>{0, 1, 100, 101, 200, 201, 0}));
  int ctas = 0;
  for (trace::Token t : r.trace) ctas += t == trace::single(trace::Family::Cta);
  EXPECT_EQ(ctas, 2);
}

TEST(Interpreter, SharedMemoryIsZeroedForEachCta) {
  // Each CTA: shared[0] += 5; global[ctaid] = shared[0]. Zeroed shared memory gives 5 twice.
  Program p{"shz",
            {block({ld(Space::Shared, 1, I(0)), alu(Op::Add, 1, R(1), I(5)),
                    st(Space::Shared, I(0), R(1)), alu(Op::Shl, 2, S(Special::CtaidX), I(2)),
                    st(Space::Global, R(2), R(1))},
                   exitTerm())},
            1,
            0};
  RunResult r = runOk(p, launch(2, 1));
  EXPECT_EQ(r.global[0], 5u);
  EXPECT_EQ(r.global[1], 5u);
}

TEST(Interpreter, SpillSlotsLiveAfterUserSharedMemory) {
  // sharedWords 1, 1 slot, 2 threads: slot 0 of thread t is shared word 1 + t.
  Program p{
      "spill",
      {block({alu(Op::Add, 1, Tid(), I(7)), stl(0, R(1))}, jmp(1)),
       block({ldl(2, 0), alu(Op::Shl, 3, Tid(), I(2)), st(Space::Global, R(3), R(2))}, exitTerm())},
      1,
      1};
  RunResult r = runOk(p, launch(1, 2));
  EXPECT_EQ(r.global[0], 7u);
  EXPECT_EQ(r.global[1], 8u);
  // The spill store shows as MS(0011) at shared words 1, 2 with 7, 8 (after WR(r1) 7 8).
  using namespace trace;
  auto T = [](int d) { return tok(Family::T, d); };
  const std::vector<Token> want = {ex(0), wm(0, 3), wr(1), T(7), T(8),
                                   ms(3), T(1),     T(7),  T(2), T(8)};
  ASSERT_GE(r.trace.size(), want.size());
  EXPECT_EQ(std::vector<Token>(r.trace.begin(), r.trace.begin() + 10), want);
}

TEST(Interpreter, OutOfRangeGlobalStoreFaultsNamingWhere) {
  Program p{"oob", {block({st(Space::Global, I(504), I(1))}, exitTerm())}, 0, 0};
  RunResult r = runOk(p, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_EQ(r.fault.kind, ErrorKind::MachineFault);
  const std::string& m = r.fault.message;
  for (const char* part : {"CTA 0", "warp 0", "lane 0", "block 0 op 0", "st.global", "global store",
                           "504", "126 words"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  }
  using namespace trace;
  EXPECT_EQ(r.trace, (std::vector<Token>{ex(0), wm(0, 1), single(Family::FaultTok)}));
}

TEST(Interpreter, FaultNamesTheFaultingLaneAndStoresNoLaneOfTheOp) {
  // Address tid * 200: lanes 0..2 are in range (word 100 at most), lane 3 (byte 600) is not.
  // Op-level fault atomicity: the addresses of all lanes are checked first, so lanes 0..2 store
  // nothing either (docs/machine.md §4).
  Program p{"lane",
            {block({alu(Op::Mul, 1, Tid(), I(200)), st(Space::Global, R(1), I(9))}, exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("lane 3"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("600"), std::string::npos) << r.fault.message;
  EXPECT_EQ(r.global[0], 0u);
  EXPECT_EQ(r.global[50], 0u);
  EXPECT_EQ(r.global[100], 0u);
}

TEST(Interpreter, FaultingAtomicUpdatesNoLane) {
  // Address tid >> 1 = 0, 0, 1, 1: lanes 0, 1 would add to word 0; lane 2's byte 1 is misaligned:
  // no lane's atomic happens and the lowest faulting lane (2) is named, not lane 3 (also
  // misaligned).
  Program p{"atomfault",
            {block({alu(Op::ShrU, 1, Tid(), I(1)), atom(Op::AtomAdd, Space::Global, 2, R(1), I(5))},
                   exitTerm())},
            0,
            0};
  RunResult r = runOk(p, launch(1, 4));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("lane 2 (thread 2)"), std::string::npos) << r.fault.message;
  EXPECT_EQ(r.global[0], 0u);
}

TEST(Interpreter, OutOfRangeSharedLoadFaults) {
  // Two words of user shared memory: byte 8 is beyond them (spill slots are not addressable).
  Program p{"shoob", {block({ld(Space::Shared, 1, I(8))}, exitTerm())}, 2, 1};
  RunResult r = runOk(p, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("shared load"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("2 words"), std::string::npos) << r.fault.message;
}

TEST(Interpreter, MisalignedAddressFaults) {
  Program p{"mis", {block({ld(Space::Global, 1, I(0), 6)}, exitTerm())}, 0, 0};
  RunResult r = runOk(p, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("byte address 6"), std::string::npos) << r.fault.message;
  EXPECT_NE(r.fault.message.find("not a multiple of 4"), std::string::npos) << r.fault.message;
}

TEST(Interpreter, NegativeAddressFaults) {
  Program p{"neg", {block({ld(Space::Global, 1, I(0), -4)}, exitTerm())}, 0, 0};
  RunResult r = runOk(p, launch(1, 1));
  ASSERT_EQ(r.status, RunStatus::Fault);
  EXPECT_NE(r.fault.message.find("(-4)"), std::string::npos) << r.fault.message;
}

TEST(Interpreter, InfiniteLoopHitsTheStepLimit) {
  Program p{"spin", {block({}, jmp(0))}, 0, 0};
  RunOptions o;
  o.maxSteps = 100;
  RunResult r = runOk(p, launch(1, 1), o);
  EXPECT_EQ(r.status, RunStatus::StepLimit);
  EXPECT_EQ(r.fault.kind, ErrorKind::StepLimit);
  EXPECT_NE(r.fault.message.find("did not finish in 100 steps"), std::string::npos);
  EXPECT_EQ(r.blockExecs, 100u);
  EXPECT_EQ(r.trace.size(), 202u);  // 100 x (EX WM) + TICK(1) + LIMIT (trace v4)
  EXPECT_EQ(r.trace.end()[-2], trace::tick(1));
  EXPECT_EQ(r.trace.back(), trace::single(trace::Family::Limit));
}

// A LIMIT of the trace cap also follows the ticks due: 2 tokens a step, a cap of 200 tokens stops
// the spin loop after 100 steps, so TICK(1) comes before the LIMIT.
TEST(Interpreter, TraceTokenCapLimitFollowsTheTicksDue) {
  Program p{"spin", {block({}, jmp(0))}, 0, 0};
  RunOptions o;
  o.maxTraceTokens = 200;
  RunResult r = runOk(p, launch(1, 1), o);
  EXPECT_EQ(r.status, RunStatus::StepLimit);
  EXPECT_EQ(r.blockExecs, 100u);
  ASSERT_EQ(r.trace.size(), 202u);
  EXPECT_EQ(r.trace[200], trace::tick(1));
  EXPECT_EQ(r.trace[201], trace::single(trace::Family::Limit));
}

// The trace cap ends a run that stays within maxSteps: the spin loop writes 2 tokens a step, so
// a cap of 50 tokens stops it before step 26 (the trace holds 50 tokens then), with LIMIT.
TEST(Interpreter, TraceTokenCapEndsTheRunAsStepLimit) {
  Program p{"spin", {block({}, jmp(0))}, 0, 0};
  RunOptions o;
  o.maxSteps = 1000;
  o.maxTraceTokens = 50;
  RunResult r = runOk(p, launch(1, 1), o);
  EXPECT_EQ(r.status, RunStatus::StepLimit);
  EXPECT_EQ(r.fault.kind, ErrorKind::StepLimit);
  EXPECT_NE(r.fault.message.find("trace reached 50 tokens (after 25 steps)"), std::string::npos)
      << r.fault.message;
  EXPECT_EQ(r.blockExecs, 25u);
  EXPECT_EQ(r.trace.size(), 51u);  // 25 x (EX WM) + LIMIT
  EXPECT_EQ(r.trace.back(), trace::single(trace::Family::Limit));
}

// Its twin: a run whose whole trace is under the cap finishes as before.
TEST(Interpreter, TraceTokenCapLeavesAShorterRunAlone) {
  Program p{"two", {block({}, jmp(1)), block({}, exitTerm())}, 0, 0};
  RunOptions o;
  o.maxTraceTokens = 3;  // the first step starts with 0 tokens, the second with 2
  RunResult r = runOk(p, launch(1, 1), o);
  EXPECT_EQ(r.status, RunStatus::Finished);
  EXPECT_EQ(r.trace.size(), 5u);  // EX WM EX WM END
}

TEST(Interpreter, ExactStepBudgetIsEnough) {
  Program p{"two", {block({}, jmp(1)), block({}, exitTerm())}, 0, 0};
  RunOptions o;
  o.maxSteps = 2;
  EXPECT_EQ(runOk(p, launch(1, 1), o).status, RunStatus::Finished);
  o.maxSteps = 1;
  EXPECT_EQ(runOk(p, launch(1, 1), o).status, RunStatus::StepLimit);
}

// kMaxStepTokens is reached, not only bounded: 16 stores in 4 lanes at word 100 (2-token index)
// of 2^30 (7 tokens), a memrec of 1 + 4 x 9 = 37 tokens each: 2 + 16 x 37 tokens. The twin: 16
// atomics of the old longest step (v4: 2 + 16 x (37 + 29)) are 32 records, refused (OverLimit).
TEST(Interpreter, TheLongestStepWritesExactlyKMaxStepTokens) {
  Block b;
  for (int i = 0; i < kMaxOpsPerBlock; ++i)
    b.ops.push_back(st(Space::Global, I(400), I(0x40000000u)));
  Program p{"longest", {b}, 0, 0};
  RunResult r = runOk(p, launch(1, 4));
  EXPECT_EQ(r.trace.size(), 2 + 16 * 37 + 1u);  // and END
  EXPECT_EQ(r.trace.size(), kMaxStepTokens + 1);
  for (Instr& in : p.blocks[0].ops) in = atom(Op::AtomAdd, Space::Global, 1, I(400), I(0x80000000u));
  auto refused = run(p, launch(1, 4));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::OverLimit);
}

TEST(Interpreter, RefusesUnverifiedPrograms) {
  Program p{"bad", {block({}, jmp(5))}, 0, 0};
  auto r = run(p, launch(1, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ProgramInvalid);
}

TEST(Interpreter, NoTraceWhenNotRecording) {
  RunOptions o;
  o.recordTrace = false;
  RunResult r = runOk(diamond(), launch(1, 4), o);
  EXPECT_TRUE(r.trace.empty());
  EXPECT_EQ(r.global[2], 20u);
}

TEST(Interpreter, SameInputsGiveTheSameTrace) {
  RunResult a = runOk(diamond(), launch(2, 7));
  RunResult b = runOk(diamond(), launch(2, 7));
  EXPECT_EQ(a.trace, b.trace);
}

}  // namespace
}  // namespace qgpu::oracle

// ---- Stepping (Execution): each event's effects, worked by hand ----

namespace stepping {

using namespace qgpu::machine;
using namespace qgpu::machine::build;
using qgpu::oracle::EventKind;
using qgpu::oracle::Execution;
using qgpu::oracle::StepEvent;
using qgpu::oracle::OpEffects;

// Block 0: r1 = tid * 2; r3 = tid * 4; global[tid] = r1; @p0 r2 = 7 with p0 = tid < 1; exit.
// Two CTAs of 3 threads.
Program doubler() {
  return Program{"doubler",
                 {block({alu(Op::Mul, 1, Tid(), I(2)), alu(Op::Mul, 3, Tid(), I(4)),
                         st(Space::Global, R(3), R(1)), cmp(Op::SetLtU, 0, Tid(), I(1)),
                         guard(alu(Op::Mov, 2, I(7)), 0)},
                        exitTerm())},
                 0, 0};
}

TEST(Execution, StepReportsEachOpsEffectsAndNextBlocks) {
  auto exec = Execution::start(doubler(), launch(2, 3));
  ASSERT_TRUE(exec.ok()) << exec.error().str();
  const StepEvent& first = exec->next();
  ASSERT_EQ(first.kind, EventKind::Step);
  EXPECT_EQ(first.step.cta, 0u);
  EXPECT_EQ(first.step.warp, 0);
  EXPECT_EQ(first.step.block, 0);
  EXPECT_EQ(first.step.mask, 0b0111);
  ASSERT_EQ(first.step.numOps, 5);
  OpEffects mul1;
  mul1.index = 0;
  mul1.exec = 0b0111;
  mul1.writesReg = true;
  mul1.reg = 1;
  mul1.regs = {0, 2, 4, 0};
  mul1.lateReg = true;  // a multiply's register write is its second record (trace v6)
  EXPECT_EQ(first.step.ops[0], mul1);
  EXPECT_EQ(first.step.ops[1].regs, (std::array<uint32_t, 4>{0, 4, 8, 0}));
  OpEffects store;
  store.index = 2;
  store.exec = 0b0111;
  store.mem = MemEffect::Write;
  store.words = {0, 1, 2, 0};
  store.values = {0, 2, 4, 0};  // word 0 is stored with its old value 0: still an access
  EXPECT_EQ(first.step.ops[2], store);
  EXPECT_TRUE(first.step.ops[3].writesPred);
  EXPECT_EQ(first.step.ops[3].pred, 0);
  EXPECT_EQ(first.step.ops[3].predBits, 0b0001);
  OpEffects guarded;
  guarded.index = 4;
  guarded.exec = 0b0001;  // the guard holds in lane 0 only
  guarded.writesReg = true;
  guarded.reg = 2;
  guarded.regs = {7, 0, 0, 0};  // lanes 1, 2 keep their 0
  EXPECT_EQ(first.step.ops[4], guarded);
  for (int l = 0; l < 3; ++l) EXPECT_EQ(first.step.nextBlock[static_cast<size_t>(l)], kExitTarget);
  EXPECT_FALSE(first.step.barrier);

  EXPECT_EQ(exec->next().kind, EventKind::CtaStart);
  const StepEvent& second = exec->next();
  ASSERT_EQ(second.kind, EventKind::Step);
  EXPECT_EQ(second.step.cta, 1u);
  EXPECT_EQ(second.step.numOps, 5);
  EXPECT_EQ(second.step.ops[2].values, (std::array<uint32_t, 4>{0, 2, 4, 0}));  // same stores
  EXPECT_EQ(exec->next().kind, EventKind::Finished);
  EXPECT_TRUE(exec->done());
  EXPECT_EQ(exec->next().kind, EventKind::Finished);  // final events repeat
  EXPECT_EQ(exec->global()[2], 4u);
  EXPECT_EQ(exec->blockExecs(), 2u);
  EXPECT_EQ(exec->laneInstrs(), 2u * 5 * 3);
}

TEST(Execution, FaultGivesTheOpsBeforeTheFaultingOne) {
  Program p{"oob2",
            {block({alu(Op::Mov, 1, I(3)), st(Space::Global, I(4 * kGlobalWords), I(1)),
                    alu(Op::Mov, 2, I(4))},
                   exitTerm())},
            0,
            0};
  auto exec = Execution::start(p, launch(1, 1));
  ASSERT_TRUE(exec.ok());
  const StepEvent& event = exec->next();
  EXPECT_EQ(event.kind, EventKind::Fault);
  ASSERT_EQ(event.step.numOps, 1);  // op 0 only; op 1 faulted, op 2 never ran
  EXPECT_EQ(event.step.ops[0].reg, 1);
  EXPECT_EQ(event.step.ops[0].regs[0], 3u);
}

TEST(Execution, FaultNamesTheStepAndEndsTheRun) {
  Program p{"oob", {block({st(Space::Global, I(4 * kGlobalWords), I(1))}, exitTerm())}, 0, 0};
  auto exec = Execution::start(p, launch(1, 1));
  ASSERT_TRUE(exec.ok());
  const StepEvent& event = exec->next();
  EXPECT_EQ(event.kind, EventKind::Fault);
  EXPECT_EQ(event.fault.kind, qgpu::ErrorKind::MachineFault);
  EXPECT_EQ(event.step.block, 0);
  EXPECT_EQ(event.step.mask, 0b0001);
  EXPECT_TRUE(exec->done());
}

TEST(Execution, StepLimitIsFinal) {
  Program loop{"loop", {block({}, jmp(0))}, 0, 0};
  auto exec = Execution::start(loop, launch(1, 1), {.maxSteps = 3});
  ASSERT_TRUE(exec.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(exec->next().kind, EventKind::Step);
  EXPECT_EQ(exec->next().kind, EventKind::StepLimit);
  EXPECT_EQ(exec->blockExecs(), 3u);
}

TEST(Execution, RefusesAProgramThatDoesNotVerify) {
  Program empty{"empty", {}, 0, 0};
  EXPECT_FALSE(Execution::start(empty, launch(1, 1)).ok());
}

}  // namespace stepping
