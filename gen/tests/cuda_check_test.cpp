// Tests for gen/cuda_check.cpp's verdicts on hand-written PTX (no compiler): a PtxUnsupported of
// the PTX evaluator is a typed refusal, not a harness error, and the interpreter is still checked
// against the generator's expectation (corpus/bugs/cvta-shared-generic: the evaluator refused
// clang's cvta.shared and checkLeg reported it as Internal).
#include "gen/cuda_check.h"

#include <gtest/gtest.h>

#include "host/ptx/parser.h"

namespace qgpu::gen {
namespace {

// A case with one CTA of one thread and no wide arrays: its expectation differs from its initial
// memory in a few words only (out[0] and acc).
CudaCase smallCase() {
  CudaPolicy p;
  p.maxGrid = 1;
  p.maxBlockX = 1;
  p.maxSlots = 1;
  p.wideArraysProb = 0;
  auto c = generateCuda(p, 7);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().str());
  return c.ok() ? *c : CudaCase{};
}

// PTX for the case's entry that thread 0 of CTA 0 uses to store the words of `want` that differ
// from the initial memory, after an `activemask` (which the evaluator refuses and lowering runs).
std::string storingPtx(const CudaCase& c, const std::array<uint32_t, 126>& want) {
  std::string t = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry " + c.name + "(\n";
  const size_t n = c.params().size();
  for (size_t i = 0; i < n; ++i) t += "\t.param .u32 p" + std::to_string(i) + (i + 1 < n ? ",\n" : "\n");
  t += ")\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<2>;\n\tactivemask.b32 %r3;\n"
       "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra DONE;\n";
  const std::array<uint32_t, 126> init = c.initialGlobal();
  for (size_t w = 0; w < want.size(); ++w)
    if (want[w] != init[w])
      t += "\tmov.u64 %rd1, " + std::to_string(4 * w) + ";\n\tmov.u32 %r2, " + std::to_string(want[w]) +
           ";\n\tst.global.u32 [%rd1], %r2;\n";
  return t + "DONE:\n\tret;\n}\n";
}

TEST(CudaCheck, AnEvaluatorRefusalIsATypedRefusalWhenTheInterpreterAgrees) {
  CudaCase c = smallCase();
  ASSERT_EQ(c.gridX, 1u);
  ASSERT_EQ(c.blockX, 1u);
  auto m = ptx::parse(storingPtx(c, c.expectedGlobal()), "t.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto leg = checkCudaLeg(c, host::Compiler::Clang, *m);
  ASSERT_TRUE(leg.ok()) << leg.error().str();
  EXPECT_EQ(leg->verdict, CudaVerdict::RefusedUnsupported);
  EXPECT_EQ(leg->refusal.kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(leg->refusal.message.find("PTX evaluator"), std::string::npos) << leg->refusal.str();
  EXPECT_NE(leg->refusal.message.find("activemask"), std::string::npos) << leg->refusal.str();
}

TEST(CudaCheck, AnEvaluatorRefusalDoesNotHideAWrongInterpreterResult) {
  // The twin: one expected word stored wrong (+1): the leg fails, naming the interpreter.
  CudaCase c = smallCase();
  std::array<uint32_t, 126> wrong = c.expectedGlobal();
  wrong[c.outWord()] += 1;
  auto m = ptx::parse(storingPtx(c, wrong), "t.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto leg = checkCudaLeg(c, host::Compiler::Clang, *m);
  ASSERT_FALSE(leg.ok());
  EXPECT_NE(leg.error().message.find("the interpreter differs from the generator at out[0]"), std::string::npos)
      << leg.error().str();
}

TEST(CudaCheck, AnEvaluatorWrongResultIsAFailure) {
  // Without the activemask the evaluator runs, and its wrong out[0] is reported as its own.
  CudaCase c = smallCase();
  std::array<uint32_t, 126> wrong = c.expectedGlobal();
  wrong[c.outWord()] += 1;
  std::string text = storingPtx(c, wrong);
  text.erase(text.find("\tactivemask.b32 %r3;\n"), 21);
  auto m = ptx::parse(text, "t.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  auto leg = checkCudaLeg(c, host::Compiler::Clang, *m);
  ASSERT_FALSE(leg.ok());
  EXPECT_NE(leg.error().message.find("the PTX evaluator differs from the generator at out[0]"), std::string::npos)
      << leg.error().str();
}

}  // namespace
}  // namespace qgpu::gen
