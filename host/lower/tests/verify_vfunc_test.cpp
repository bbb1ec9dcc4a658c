// Tests for host/lower/verify_vfunc.cpp: a well-formed hand-built VFunc passes, and each broken
// invariant (its failing twin) is reported as Internal, naming the pass, the block, the op and
// the operand.
#include "host/lower/verify_vfunc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "host/ptx/parser.h"

namespace qgpu::lower {
namespace {

using machine::Op;

// block 0: v0 = 5; v1 = v0 + 1; q0 = v1 == 6; br q0 ? 1 : 2
// block 1: st [v0], v1 ; jmp 2      block 2: exit
VFunc good() {
  VFunc f;
  f.name = "k";
  int v0 = f.newReg(), v1 = f.newReg(), q0 = f.newPred();
  VBlock b0, b1, b2;
  VInstr mov;
  mov.op = Op::Mov, mov.dst = v0, mov.src[0] = VOperand::i(5);
  VInstr add;
  add.op = Op::Add, add.dst = v1, add.src[0] = VOperand::r(v0), add.src[1] = VOperand::i(1);
  VInstr eq;
  eq.op = Op::SetEq, eq.dstPred = q0, eq.src[0] = VOperand::r(v1), eq.src[1] = VOperand::i(6);
  b0.ops = {mov, add, eq};
  b0.term = {machine::TermKind::Branch, q0, false, 1, 2};
  VInstr st;
  st.op = Op::St, st.src[0] = VOperand::r(v0), st.src[1] = VOperand::r(v1);
  b1.ops = {st};
  b1.term = {machine::TermKind::Jump, kNone, false, kNone, 2};
  b2.term = {machine::TermKind::Exit, kNone, false, kNone, kNone};
  f.blocks = {b0, b1, b2};
  return f;
}

TEST(VerifyVFunc, AWellFormedFunctionPasses) {
  Status s = verify(good(), "translate");
  EXPECT_TRUE(s.ok()) << s.error().str();
}

struct Broken {
  const char* what;
  std::function<void(VFunc&)> breakIt;
  const char* message;  // a substring the Diag must have
};

TEST(VerifyVFunc, EveryBrokenInvariantIsReportedWithItsPass) {
  const Broken cases[] = {
      {"no blocks", [](VFunc& f) { f.blocks.clear(); }, "no blocks"},
      {"source vreg out of range", [](VFunc& f) { f.blocks[0].ops[1].src[0] = VOperand::r(7); },
       "block 0 op 1 (add): source 0 is vreg 7, numRegs is 2"},
      {"missing source", [](VFunc& f) { f.blocks[0].ops[1].src[1] = VOperand{}; }, "source 1 is missing"},
      {"destination out of range", [](VFunc& f) { f.blocks[0].ops[0].dst = 2; }, "destination is vreg 2"},
      {"vreg written by an op that writes none", [](VFunc& f) { f.blocks[1].ops[0].dst = 0; },
       "op writes no register"},
      {"predicate written by an op that writes none", [](VFunc& f) { f.blocks[0].ops[1].dstPred = 0; },
       "op writes no predicate"},
      {"predicate destination out of range", [](VFunc& f) { f.blocks[0].ops[2].dstPred = 3; }, "pvreg 3"},
      {"guard out of range", [](VFunc& f) { f.blocks[0].ops[0].guard = 1; }, "guard is pvreg 1"},
      {"branch target out of range", [](VFunc& f) { f.blocks[0].term.taken = 3; }, "taken target is 3"},
      {"jump target missing", [](VFunc& f) { f.blocks[1].term.next = kNone; }, "next target is -1"},
      {"branch predicate out of range", [](VFunc& f) { f.blocks[0].term.pred = kNone; }, "branch predicate"},
      {"noSpill out of step", [](VFunc& f) { f.numRegs = 3; }, "noSpill has 2 entries for 3 vregs"},
  };
  for (const Broken& c : cases) {
    VFunc f = good();
    c.breakIt(f);
    Status s = verify(f, "cleanup");
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.error().kind, ErrorKind::Internal) << c.what;
    EXPECT_NE(s.error().message.find("after cleanup"), std::string::npos) << c.what << ": " << s.error().message;
    EXPECT_NE(s.error().message.find(c.message), std::string::npos) << c.what << ": " << s.error().message;
  }
}

TEST(VerifyVFunc, EnabledByTheOptionOrTheEnvironment) {
  LowerOptions o;
  unsetenv("QGPU_VERIFY_VIR");
  EXPECT_FALSE(verifyPassesEnabled(o));
  setenv("QGPU_VERIFY_VIR", "0", 1);
  EXPECT_FALSE(verifyPassesEnabled(o));
  setenv("QGPU_VERIFY_VIR", "1", 1);
  EXPECT_TRUE(verifyPassesEnabled(o));
  unsetenv("QGPU_VERIFY_VIR");
  o.verifyPasses = true;
  EXPECT_TRUE(verifyPassesEnabled(o));
}

// The pipeline keeps the invariants on real input: lowering a small kernel with the check on.
TEST(VerifyVFunc, LoweringWithTheCheckOnSucceeds) {
  const char* text =
      ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k(.param .u64 k_param_0)\n{\n"
      "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n"
      "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r1, %tid.x;\n"
      "\tsetp.gt.u32 %p1, %r1, 1;\n\t@%p1 bra $L__end;\n\tmul.wide.u32 %rd3, %r1, 4;\n"
      "\tadd.s64 %rd4, %rd2, %rd3;\n\tst.global.u32 [%rd4], %r1;\n$L__end:\n\tret;\n}\n";
  auto m = ptx::parse(text, "k.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  LowerOptions o;
  o.params = {0};
  o.verifyPasses = true;
  auto p = lower(*m, o);
  EXPECT_TRUE(p.ok()) << p.error().str();
}

}  // namespace
}  // namespace qgpu::lower
