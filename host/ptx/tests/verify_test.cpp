// qgpu/host/ptx/tests/verify_test.cpp — verify(): each check with a passing and a failing twin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/ptx/parser.h"
#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kBodyLine = 12;
std::string module(const std::string& body) {
  return ".version 6.4\n"
         ".target sm_75\n"
         ".address_size 64\n"
         ".func (.param .b32 r) f(.param .b32 a)\n"
         "{\n.reg .b32 %x;\nld.param.u32 %x, [a];\nst.param.b32 [r], %x;\nret;\n}\n"  // lines 4-10
         ".visible .entry k(.param .u64 k_param_0)\n"                                  // line 11
         "{\n.reg .pred %p<3>;\n.reg .b32 %r<10>;\n.reg .b64 %rd<10>;\n" +              // 12-15
         body + "}\n";
}
constexpr uint32_t kFirst = kBodyLine + 4;  // first body statement line

void expectOk(const std::string& body) {
  auto m = parse(module(body), "v.ptx");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().str()) << "\n" << body;
}

void expectInvalid(const std::string& body, uint32_t line, const std::string& mention) {
  auto m = parse(module(body), "v.ptx");
  ASSERT_FALSE(m.ok()) << body;
  EXPECT_EQ(m.error().kind, ErrorKind::PtxInvalid) << m.error().str();
  EXPECT_EQ(m.error().loc.line, line) << m.error().str();
  EXPECT_THAT(m.error().message, HasSubstr(mention)) << m.error().str();
}

TEST(PtxVerify, AcceptsEverySample) {
  for (const auto& s : testing::allSamples()) {
    auto m = parse(s.text, s.name);
    ASSERT_TRUE(m.ok()) << m.error().str();
    EXPECT_TRUE(verify(*m).ok()) << s.name;
  }
}

TEST(PtxVerify, RejectsUndefinedLabel) {
  expectOk("bra.uni L1;\nL1:\nret;\n");
  expectInvalid("bra.uni L2;\nL1:\nret;\n", kFirst, "undefined label 'L2'");
}

TEST(PtxVerify, RejectsWrongOperandCount) {
  expectOk("add.s32 %r1, %r2, %r3;\nret;\n");
  expectInvalid("add.s32 %r1, %r2;\nret;\n", kFirst, "'add.s32 %r1, %r2;' (add): expects 2 source operand(s), has 1");
  expectInvalid("ret;\nst.global.u32 [%rd1];\n", kFirst + 1, "expects 2 source operand(s), has 1");
  expectInvalid("ret;\natom.global.cas.b32 %r1, [%rd1], %r2;\n", kFirst + 1, "expects 3 source");
}

TEST(PtxVerify, RejectsWrongTypeCount) {
  expectOk("cvt.u64.u32 %rd1, %r1;\nret;\n");
  expectInvalid("cvt.u64 %rd1, %r1;\nret;\n", kFirst, "expects 2 type suffix(es), has 1");
  expectInvalid("add %r1, %r2, %r3;\nret;\n", kFirst, "expects 1 type suffix(es), has 0");
}

TEST(PtxVerify, RejectsUnknownCallee) {
  std::string call = "{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r1;\n"
                     "call.uni (r0), CALLEE, (p0);\nld.param.b32 %r2, [r0];\n}\nret;\n";
  std::string good = call, bad = call;
  good.replace(good.find("CALLEE"), 6, "f");
  bad.replace(bad.find("CALLEE"), 6, "g");
  expectOk(good);
  expectInvalid(bad, kFirst + 4, "call of unknown function 'g'");
}

TEST(PtxVerify, RejectsCallWithWrongArgumentCount) {
  expectInvalid("{\n.param .b32 r0;\ncall.uni (r0), f;\n}\nret;\n", kFirst + 2,
                "'f' takes 1 argument(s), the call passes 0");
}

TEST(PtxVerify, RejectsCallOfKernel) {
  expectInvalid("call.uni k, (k_param_0);\nret;\n", kFirst, "is a kernel");
}

TEST(PtxVerify, RejectsPredicateWhereValueExpected) {
  expectOk("setp.lt.s32 %p1, %r1, %r2;\nselp.b32 %r3, 1, 0, %p1;\nret;\n");
  expectInvalid("add.s32 %r1, %p1, %r2;\nret;\n", kFirst, "predicate '%p1' where a value is expected");
  expectInvalid("setp.lt.s32 %r1, %r1, %r2;\nret;\n", kFirst, "'%r1' is .b32 where a predicate is expected");
  expectInvalid("@%r1 bra L;\nL:\nret;\n", kFirst, "where a predicate is expected");
}

TEST(PtxVerify, RejectsAddressOfUndeclaredVariable) {
  expectOk("ld.param.u64 %rd1, [k_param_0];\nret;\n");
  expectInvalid("ld.param.u64 %rd1, [k_param_9];\nret;\n", kFirst, "undeclared variable 'k_param_9'");
}

TEST(PtxVerify, RejectsAddressWhereValueExpectedAndViceVersa) {
  expectInvalid("add.s32 %r1, [%rd1], 1;\nret;\n", kFirst, "address operand where a value is expected");
  expectInvalid("ld.global.u32 %r1, %rd1;\nret;\n", kFirst, "operand 1 must be an address");
}

TEST(PtxVerify, RejectsImmediateDestination) {
  expectInvalid("mov.u32 5, %r1;\nret;\n", kFirst, "destination 1 is not a register");
}

TEST(PtxVerify, RejectsSetpWithoutComparisonAndAtomWithoutOperation) {
  expectInvalid("setp.s32 %p1, %r1, %r2;\nret;\n", kFirst, "needs a comparison");
  expectInvalid("atom.global.u32 %r1, [%rd1], 1;\nret;\n", kFirst, "needs an operation modifier");
}

TEST(PtxVerify, RejectsOutOfRangeRegisterIdInConstructedModule) {
  auto m = parse(module("mov.u32 %r1, 1;\nret;\n"), "v.ptx");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(verify(*m).ok());
  Module broken = *m;
  broken.functions[1].body[0].dsts[0].reg = 9999;
  auto s = verify(broken);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::PtxInvalid);
  EXPECT_THAT(s.error().message, HasSubstr("register id 9999 is not declared"));
  EXPECT_EQ(s.error().loc.line, kFirst);
}

TEST(PtxVerify, RejectsLabelPastTheBodyInConstructedModule) {
  auto m = parse(module("ret;\n"), "v.ptx");
  ASSERT_TRUE(m.ok());
  Module broken = *m;
  broken.functions[1].labels["L"] = 7;
  auto s = verify(broken);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("label 'L' points past the body"));
}

}  // namespace
}  // namespace qgpu::ptx
