// Tests for oracle/machine.cpp: one test per verify() rule (each with a valid twin), and the
// listing format.
#include "oracle/machine.h"

#include <gtest/gtest.h>

#include "oracle/tests/builder.h"

namespace qgpu::machine {
namespace {

using namespace build;

// A valid base program; each test breaks one rule of it.
Program base() {
  return Program{"k",
                 {block({cmp(Op::SetLtU, 0, Tid(), I(2)), alu(Op::Add, 1, Tid(), I(4))},
                        br(0, 1, 1)),
                  block({st(Space::Global, I(0), R(1))}, exitTerm())},
                 0,
                 0};
}

void expectInvalid(const Program& p, ErrorKind kind, const std::string& part) {
  Status s = verify(p);
  ASSERT_FALSE(s.ok()) << "verify accepted:\n" << print(p);
  EXPECT_EQ(s.error().kind, kind) << s.error().message;
  EXPECT_NE(s.error().message.find(part), std::string::npos)
      << "'" << part << "' not in: " << s.error().message;
}

TEST(MachineVerify, AcceptsTheBaseProgram) {
  Status s = verify(base());
  EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(verify(base(), launch(16, 16)).ok());
}

TEST(MachineVerify, RejectsEmptyProgram) {
  expectInvalid(Program{"k", {}, 0, 0}, ErrorKind::ProgramInvalid, "no blocks");
}

TEST(MachineVerify, RejectsMoreThan32Blocks) {
  Program p{"k", std::vector<Block>(33, block({}, exitTerm())), 0, 0};
  expectInvalid(p, ErrorKind::OverLimit, "33 blocks");
  p.blocks.resize(32);
  EXPECT_TRUE(verify(p).ok());
}

TEST(MachineVerify, RejectsMoreThan16OpsPerBlock) {
  Program p = base();
  p.blocks[1].ops.assign(17, alu(Op::Mov, 1, I(0)));
  expectInvalid(p, ErrorKind::OverLimit, "block 1 has 17 ops");
  p.blocks[1].ops.resize(16);
  EXPECT_TRUE(verify(p).ok());
}

// The prompt keys ROM rows by record index (docs/trace.md "Prompt"): an atomic with a register
// destination writes two records, so 9 of them (18 records) overflow a block of 9 ops; into r0
// (one record each) they fit, and 7 of them plus 2 ops make exactly 16.
TEST(MachineVerify, RejectsMoreThan16RecordsPerBlock) {
  Program p = base();
  p.blocks[1].ops.assign(9, atom(Op::AtomAdd, Space::Global, 1, I(0), I(1)));
  expectInvalid(p, ErrorKind::OverLimit, "block 1 has 9 ops that write 18 trace records");
  for (Instr& in : p.blocks[1].ops) in.dst = 0;
  EXPECT_TRUE(verify(p).ok()) << verify(p).error().message;
  p.blocks[1].ops.assign(7, atom(Op::AtomAdd, Space::Global, 1, I(0), I(1)));
  p.blocks[1].ops.push_back(st(Space::Global, I(0), R(1)));
  p.blocks[1].ops.push_back(st(Space::Global, I(0), R(1)));
  EXPECT_EQ(blockRecords(p.blocks[1]), 16);
  EXPECT_TRUE(verify(p).ok()) << verify(p).error().message;
  p.blocks[1].ops.push_back(st(Space::Global, I(0), R(1)));
  expectInvalid(p, ErrorKind::OverLimit, "block 1 has 10 ops that write 17 trace records");
}

TEST(MachineVerify, RejectsRegisterIndexOutOfRange) {
  Program p = base();
  p.blocks[0].ops[1].src[0] = R(16);
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 op 1 (add): src0 reads r16");
}

TEST(MachineVerify, RejectsDestinationRegisterOutOfRange) {
  Program p = base();
  p.blocks[0].ops[1].dst = 16;
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 op 1 (add): dst writes r16");
}

TEST(MachineVerify, RejectsPredicateIndexOutOfRange) {
  Program p = base();
  p.blocks[0].ops.push_back(selp(2, I(1), I(0), 9));
  expectInvalid(p, ErrorKind::ProgramInvalid,
                "block 0 op 2 (selp): psrc0 reads p9, which is not a predicate (p0..p7)");
}

TEST(MachineVerify, RejectsDestinationPredicateOutOfRange) {
  Program p = base();
  p.blocks[0].ops[0].dstPred = 8;
  expectInvalid(p, ErrorKind::ProgramInvalid, "dstPred writes p8");
}

TEST(MachineVerify, RejectsGuardReadingAnUnwrittenPredicate) {
  Program p = base();
  p.blocks[0].ops[1] = guard(p.blocks[0].ops[1], 3);
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 op 1 (add): guard reads p3 before");
  p.blocks[0].ops[1].guard.pred = 0;  // written by op 0: fine
  EXPECT_TRUE(verify(p).ok());
}

TEST(MachineVerify, RejectsPredicateWrittenOnlyInAnotherBlock) {
  // p0 is written in block 0 but predicates do not survive block boundaries.
  Program p = base();
  p.blocks[1].ops.push_back(selp(2, I(1), I(0), 0));
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 1 op 1 (selp): psrc0 reads p0 before");
}

TEST(MachineVerify, RejectsBranchOnUnwrittenPredicate) {
  Program p = base();
  p.blocks[0].term.pred = 2;
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 terminator (br): branch reads p2 before");
}

TEST(MachineVerify, RejectsReadBeforeWriteWithinTheBlock) {
  Program p = base();
  std::swap(p.blocks[0].ops[0], p.blocks[0].ops[1]);
  p.blocks[0].ops[0] = guard(p.blocks[0].ops[0], 0);  // guard on p0, written by the op after it
  expectInvalid(p, ErrorKind::ProgramInvalid, "guard reads p0 before");
}

TEST(MachineVerify, RejectsMissingSource) {
  Program p = base();
  p.blocks[0].ops[1].src[1] = Operand{};
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 op 1 (add): src1 is missing");
}

TEST(MachineVerify, RejectsOperandInUnusedSlot) {
  Program p = base();
  p.blocks[0].ops[1].src[2] = R(3);
  expectInvalid(p, ErrorKind::ProgramInvalid, "src2 is unused by this op and must be None");
}

TEST(MachineVerify, RejectsPredicateSourceInUnusedSlot) {
  Program p = base();
  p.blocks[0].ops[1].psrc[0] = 0;
  expectInvalid(p, ErrorKind::ProgramInvalid, "psrc0 is unused");
}

TEST(MachineVerify, RejectsMissingPredicateSource) {
  Program p = base();
  p.blocks[0].ops.push_back(pop(Op::PAnd, 1, 0));
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 0 op 2 (pand): psrc1 is missing");
}

TEST(MachineVerify, RejectsPconstWithoutImmediateZeroOrOne) {
  Program p = base();
  p.blocks[0].ops.push_back(pconst(1, true));
  EXPECT_TRUE(verify(p).ok());
  p.blocks[0].ops.back().src[0] = I(2);
  expectInvalid(p, ErrorKind::ProgramInvalid, "(pconst): src0 must be the immediate 0 or 1");
  p.blocks[0].ops.back().src[0] = R(1);
  expectInvalid(p, ErrorKind::ProgramInvalid, "(pconst): src0 must be the immediate 0 or 1");
}

TEST(MachineVerify, RejectsRegisterDestinationOnOpWithoutOne) {
  Program p = base();
  p.blocks[1].ops[0].dst = 3;  // st writes no register
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 1 op 0 (st): the op writes no register");
}

TEST(MachineVerify, RejectsPredicateDestinationOnOpWithoutOne) {
  Program p = base();
  p.blocks[0].ops[1].dstPred = 1;
  expectInvalid(p, ErrorKind::ProgramInvalid, "(add): the op writes no predicate");
}

TEST(MachineVerify, RejectsInvalidMemorySpace) {
  Program p = base();
  p.blocks[1].ops[0].space = static_cast<Space>(2);
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 1 op 0 (st): memory space 2 does not exist");
}

TEST(MachineVerify, RejectsSpaceOrOffsetOnNonMemoryOp) {
  Program p = base();
  p.blocks[0].ops[1].space = Space::Shared;
  expectInvalid(p, ErrorKind::ProgramInvalid, "(add): the op accesses no memory");
  p = base();
  p.blocks[0].ops[1].offset = 4;
  expectInvalid(p, ErrorKind::ProgramInvalid, "(add): the op takes no offset");
}

TEST(MachineVerify, RejectsSpillSlotOutOfRange) {
  Program p = base();
  p.blocks[1].ops.push_back(stl(0, R(1)));
  expectInvalid(p, ErrorKind::ProgramInvalid, "block 1 op 1 (stl): spill slot 0 is out of range");
  p.spillSlots = 1;
  EXPECT_TRUE(verify(p).ok());
}

TEST(MachineVerify, RejectsBranchTargetOutOfRange) {
  Program p = base();
  p.blocks[0].term.taken = 2;
  expectInvalid(p, ErrorKind::ProgramInvalid,
                "block 0 terminator (br): taken target B2 does not exist");
  p = base();
  p.blocks[1].term = jmp(7);
  expectInvalid(p, ErrorKind::ProgramInvalid,
                "block 1 terminator (jmp): next target B7 does not exist");
}

TEST(MachineVerify, ExitTargetOnlyOnBranches) {
  Program p = base();
  p.blocks[0].term.taken = kExitTarget;
  EXPECT_TRUE(verify(p).ok());
  EXPECT_NE(print(p).find(" ? exit : B"), std::string::npos) << print(p);
  p = base();
  p.blocks[1].term = jmp(kExitTarget);
  expectInvalid(p, ErrorKind::ProgramInvalid,
                "block 1 terminator (jmp): next target B255 does not exist");
  p = base();
  p.blocks[1].term = bar(kExitTarget);
  expectInvalid(p, ErrorKind::ProgramInvalid, "next target B255 does not exist");
}

TEST(MachineVerify, RejectsBranchWithoutPredicate) {
  Program p = base();
  p.blocks[0].term.pred = kNoPred;
  expectInvalid(p, ErrorKind::ProgramInvalid, "a branch needs a predicate");
}

TEST(MachineVerify, RejectsPredicateOnJump) {
  Program p = base();
  p.blocks[1].term = jmp(0);
  p.blocks[1].term.pred = 0;
  expectInvalid(p, ErrorKind::ProgramInvalid, "only a branch has a predicate");
}

TEST(MachineVerify, RejectsSharedMemoryOverflowWithLaunch) {
  Program p = base();
  p.sharedWords = 62;
  p.spillSlots = 4;  // 62 + 4 x 16 = 126 fits; 62 + 4 x 16 + 1 does not
  EXPECT_TRUE(verify(p, launch(1, 16)).ok());
  p.sharedWords = 63;
  Status s = verify(p, launch(1, 16));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(s.error().message.find("127 words"), std::string::npos) << s.error().message;
  EXPECT_TRUE(verify(p, launch(1, 15)).ok());  // 63 + 60
}

TEST(MachineVerify, RejectsSharedMemoryOverflowWithoutLaunch) {
  Program p = base();
  p.sharedWords = 120;
  p.spillSlots = 7;
  expectInvalid(p, ErrorKind::OverLimit, "spill slots");
}

TEST(MachineVerify, RejectsLaunchShapeOutOfRange) {
  for (auto [grid, threads] : {std::pair{1u, 0u}, {1u, 17u}, {0u, 1u}, {17u, 1u}}) {
    Status s = verify(base(), launch(grid, threads));
    ASSERT_FALSE(s.ok()) << grid << "x" << threads;
    EXPECT_EQ(s.error().kind, ErrorKind::OverLimit);
  }
  EXPECT_TRUE(verify(base(), launch(16, 1)).ok());
}

TEST(MachinePrint, ListsBlocksOpsCommitsAndTerminators) {
  Program p{"demo",
            {block({cmp(Op::SetLtU, 1, Tid(), I(2)), guard(alu(Op::Add, 3, R(2), I(4)), 1, true),
                    ld(Space::Shared, 4, R(3), 8), st(Space::Global, R(3), R(4), -4),
                    atom(Op::AtomCas, Space::Global, 5, I(0), R(1), R(2)),
                    shfl(Op::ShflDown, 6, R(5), I(1), I(0x1c1f)), ballot(7, 1),
                    alu(Op::Mov, 8, S(Special::CtaidX))},
                   br(1, 2, 1, true)),
             block({stl(0, R(3)), ldl(2, 0)}, bar(2)), block({}, jmp(3)), block({}, exitTerm())},
            4,
            1};
  EXPECT_EQ(print(p),
            ".kernel demo shared 4 spill 1\n"
            "B0:\n"
            "  set.lt.u p1, %tid.x, 2\n"
            "  @!p1 add r3, r2, 4\n"
            "  ld.shared r4, [r3+8]\n"
            "  st.global [r3-4], r4\n"
            "  atom.cas.global r5, [0], r1, r2\n"
            "  shfl.down r6, r5, 1, 0x1c1f\n"
            "  vote.ballot r7, p1\n"
            "  mov r8, %ctaid.x\n"
            "  br !p1 ? B2 : B1\n"
            "B1:\n"
            "  stl slot0, r3\n"
            "  ldl r2, slot0\n"
            "  bar -> B2\n"
            "B2:\n"
            "  jmp B3\n"
            "B3:\n"
            "  exit\n");
}

TEST(MachinePrint, ImmediatesPrintSignedOrHex) {
  EXPECT_EQ(print(alu(Op::Add, 1, R(1), I(-1))), "add r1, r1, -1");
  EXPECT_EQ(print(alu(Op::And, 1, R(1), I(0xffff0000u))), "and r1, r1, 0xffff0000");
}

// Found by gen_program_test (ListingShowsEveryOperandOfEveryGeneratedOp): the listing printed
// numSources predicate sources, so "pand p1, p0, p2" printed as "pand p1".
TEST(MachinePrint, SubwordStoresShowAddressAndValueButNoDestination) {
  EXPECT_EQ(print(stSub(Op::StB8, Space::Global, R(1), R(2), 3)), "st.b8.global [r1+3], r2");
  EXPECT_EQ(print(stSub(Op::StB16, Space::Shared, I(6), I(7))), "st.b16.shared [6], 7");
}

TEST(MachinePrint, PredicateOpsShowTheirPredicateSources) {
  EXPECT_EQ(print(pop(Op::PAnd, 1, 0, 2)), "pand p1, p0, p2");
  EXPECT_EQ(print(pop(Op::PNot, 3, 4)), "pnot p3, p4");
  EXPECT_EQ(print(pconst(5, true)), "pconst p5, 1");
}

TEST(MachineOps, ShapeTableMatchesIsaDef) {
  EXPECT_EQ(numGeneralSources(Op::Mad), 3);
  EXPECT_EQ(numGeneralSources(Op::PAnd), 0);
  EXPECT_EQ(numGeneralSources(Op::PConst), 1);
  EXPECT_EQ(numPredSources(Op::PAnd), 2);
  EXPECT_EQ(numPredSources(Op::Selp), 1);
  EXPECT_EQ(numPredSources(Op::Ballot), 1);
  EXPECT_EQ(numPredSources(Op::ShflIdx), 0);
  EXPECT_TRUE(writesReg(Op::AtomAdd));
  EXPECT_FALSE(writesReg(Op::St));
  EXPECT_FALSE(writesReg(Op::StLocal));
  EXPECT_FALSE(writesReg(Op::VoteAny));
  EXPECT_TRUE(writesPred(Op::VoteAll));
  EXPECT_FALSE(writesPred(Op::Ballot));
}

}  // namespace
}  // namespace qgpu::machine
