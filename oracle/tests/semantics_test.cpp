// oracle/tests/semantics_test.cpp — the op table and the evaluators agree: every op has the
// semantics its row promises, and no evaluator claims an op of another class.
//
// Values themselves are pinned by hand-worked tables through the interpreter
// (interpreter_test.cpp) and, for a few edge cases, directly here.
#include "oracle/semantics.h"

#include <gtest/gtest.h>

#include <set>

namespace qgpu::oracle {
namespace {

using machine::DstKind;
using machine::LaneScope;
using machine::MemEffect;
using machine::Op;
using machine::OpClass;

// Ops whose meaning is data movement that the interpreter itself performs (a select between two
// sources, a memory or spill-slot load or store): they have no value evaluator by design.
const std::set<Op> kMovementOps = {Op::Selp, Op::Ld, Op::St, Op::LdLocal, Op::StLocal};

bool hasEvaluator(Op op) {
  return evalAlu(op, 7, 3, 1).has_value() || evalCmp(op, 7, 3).has_value() ||
         evalPred(op, 0b0101, 0b0011, 1).has_value() || evalAtomic(op, 7, 3, 1).has_value() ||
         shuffleSource(op, 1, 1, 0x1f).has_value() || evalVote(op, 0b0101, 0b1111).has_value() ||
         evalSubwordStore(op, 7, 1, 3).has_value();
}

TEST(Semantics, EveryOpHasSemanticsOrIsDataMovement) {
  for (int i = 0; i < machine::kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const char* name = machine::opInfo(op).mnemonic;
    if (kMovementOps.count(op))
      EXPECT_FALSE(hasEvaluator(op)) << name << " is data movement but has an evaluator";
    else
      EXPECT_TRUE(hasEvaluator(op)) << name << " has no semantics in oracle/semantics.h";
  }
}

TEST(Semantics, EachEvaluatorCoversExactlyItsClass) {
  for (int i = 0; i < machine::kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const machine::OpInfo& info = machine::opInfo(op);
    const bool warpShuffle = info.cls == OpClass::Warp && info.numSources == 3;
    EXPECT_EQ(evalAlu(op, 1, 2, 3).has_value(), info.cls == OpClass::Alu) << info.mnemonic;
    EXPECT_EQ(evalCmp(op, 1, 2).has_value(), info.cls == OpClass::Cmp) << info.mnemonic;
    EXPECT_EQ(evalPred(op, 1, 2, 0).has_value(), info.cls == OpClass::Pred) << info.mnemonic;
    EXPECT_EQ(evalAtomic(op, 1, 2, 3).has_value(),
              info.cls == OpClass::Mem && info.mem == MemEffect::ReadWrite)
        << info.mnemonic;
    EXPECT_EQ(shuffleSource(op, 0, 1, 0x1f).has_value(), warpShuffle) << info.mnemonic;
    EXPECT_EQ(evalSubwordStore(op, 1, 2, 3).has_value(),
              info.cls == OpClass::Mem && info.mem == MemEffect::Write && op != Op::St)
        << info.mnemonic;
    EXPECT_EQ(evalVote(op, 1, 0xf).has_value(), info.cls == OpClass::Warp && !warpShuffle)
        << info.mnemonic;
  }
}

TEST(Semantics, TableRowsAreConsistentWithTheirClass) {
  for (int i = 0; i < machine::kNumOps; ++i) {
    const machine::OpInfo& info = machine::opInfo(static_cast<Op>(i));
    switch (info.cls) {
      case OpClass::Alu:
        EXPECT_EQ(info.dst, DstKind::Reg) << info.mnemonic;
        EXPECT_GE(info.numSources, 1) << info.mnemonic;
        break;
      case OpClass::Cmp:
      case OpClass::Pred:
        EXPECT_EQ(info.dst, DstKind::Pred) << info.mnemonic;
        break;
      case OpClass::Sel:
        EXPECT_EQ(info.numPredSources, 1) << info.mnemonic;
        break;
      case OpClass::Mem:
      case OpClass::Local:
        EXPECT_NE(info.mem, MemEffect::None) << info.mnemonic;
        EXPECT_EQ(info.dst == DstKind::None, info.mem == MemEffect::Write) << info.mnemonic;
        break;
      case OpClass::Warp:
        EXPECT_EQ(info.lanes, LaneScope::Cross) << info.mnemonic;
        break;
    }
    if (info.cls != OpClass::Warp) {
      EXPECT_EQ(info.lanes, LaneScope::Own) << info.mnemonic;
    }
    if (info.cls != OpClass::Mem && info.cls != OpClass::Local) {
      EXPECT_EQ(info.mem, MemEffect::None) << info.mnemonic;
    }
    EXPECT_LE(info.numSources, 3) << info.mnemonic;
    EXPECT_LE(info.numPredSources, 2) << info.mnemonic;
  }
}

// The Result column (trace v5, v6): the register result comes in a second record for exactly the
// atomics (after the memory stage) and the four multiplies (after the circuit's multiplier), by
// hand; every other op's record is its own.
TEST(Semantics, LateResultsAreTheAtomicsAndTheMultiplies) {
  const std::set<Op> kMultiplies = {Op::Mul, Op::Mad, Op::MulHiU, Op::MulHiS};
  for (int i = 0; i < machine::kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const machine::OpInfo& info = machine::opInfo(op);
    const bool atomic = info.cls == OpClass::Mem && info.mem == MemEffect::ReadWrite;
    EXPECT_EQ(info.result == machine::ResultTiming::Late, atomic || kMultiplies.count(op) == 1)
        << info.mnemonic;
    if (info.result == machine::ResultTiming::Late) {
      EXPECT_EQ(info.dst, DstKind::Reg) << info.mnemonic;
    }
  }
}

TEST(Semantics, SubwordStoresReplaceOnlyTheirFieldLittleEndian) {
  // old = 0x11223344: byte 0 is 0x44, byte 3 is 0x11; the value's high bits are dropped.
  EXPECT_EQ(evalSubwordStore(Op::StB8, 0x11223344u, 0, 0xffffffabu), 0x112233abu);
  EXPECT_EQ(evalSubwordStore(Op::StB8, 0x11223344u, 6, 0xab), 0x11ab3344u);  // byte 2 of word 1
  EXPECT_EQ(evalSubwordStore(Op::StB8, 0x11223344u, 3, 0xab), 0xab223344u);
  EXPECT_EQ(evalSubwordStore(Op::StB16, 0x11223344u, 0, 0x1234abcdu), 0x1122abcdu);
  EXPECT_EQ(evalSubwordStore(Op::StB16, 0x11223344u, 10, 0x1234abcdu), 0xabcd3344u);
  EXPECT_EQ(accessBytes(Op::StB8), 1);
  EXPECT_EQ(accessBytes(Op::StB16), 2);
  EXPECT_EQ(accessBytes(Op::St), 4);
  EXPECT_EQ(accessBytes(Op::AtomCas), 4);
  EXPECT_EQ(accessBytes(Op::Add), 0);
}

// Hand-worked edge cases (docs/machine.md §4), so a change of the evaluators is caught here too.
TEST(Semantics, EdgeCasesHaveTheDocumentedResults) {
  EXPECT_EQ(evalAlu(Op::DivU, 5, 0, 0), 0xffffffffu);
  EXPECT_EQ(evalAlu(Op::DivS, 0xfffffffbu, 0, 0), 1u);           // -5 / 0
  EXPECT_EQ(evalAlu(Op::DivS, 0x80000000u, 0xffffffffu, 0), 0x80000000u);  // INT_MIN / -1
  EXPECT_EQ(evalAlu(Op::RemS, 0x80000000u, 0xffffffffu, 0), 0u);
  EXPECT_EQ(evalAlu(Op::Shl, 1, 32, 0), 0u);
  EXPECT_EQ(evalAlu(Op::ShrS, 0x80000000u, 40, 0), 0xffffffffu);
  EXPECT_EQ(evalAlu(Op::Bfind, 0, 0, 0), 0xffffffffu);
  EXPECT_EQ(evalAlu(Op::BfeS, 0x00000080u, 4, 4), 0xfffffff8u);  // field 1000b, sign-filled
  EXPECT_EQ(evalAtomic(Op::AtomInc, 5, 5, 0), 0u);
  EXPECT_EQ(evalAtomic(Op::AtomDec, 0, 9, 0), 9u);
  EXPECT_EQ(evalPred(Op::PNot, 0b0101, 0, 0), 0b1010u);
  EXPECT_EQ(evalVote(Op::VoteAll, 0b0111, 0b0110), 1u);  // inactive lane 0 does not vote
  EXPECT_EQ(shuffleSource(Op::ShflDown, 3, 1, 0x1f), -1);   // past the last lane: keeps its own
  EXPECT_EQ(shuffleSource(Op::ShflBfly, 2, 1, 0x1f), 3);
}

}  // namespace
}  // namespace qgpu::oracle
