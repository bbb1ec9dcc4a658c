// qgpu/host/ptx/tests/printer_test.cpp — print() is canonical PTX and parse(print(m)) == m.
#include <gtest/gtest.h>

#include "host/ptx/compare.h"
#include "host/ptx/parser.h"
#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

using testing::allSamples;

void expectRoundTrip(const std::string& text, const std::string& name) {
  auto m = parse(text, name);
  ASSERT_TRUE(m.ok()) << name << ": " << m.error().str();
  std::string printed = print(*m);
  auto again = parse(printed, name + ".printed");
  ASSERT_TRUE(again.ok()) << name << ": " << again.error().str() << "\n" << printed;
  auto diff = firstDifference(*m, *again);
  EXPECT_FALSE(diff.has_value()) << name << ": " << *diff << "\n" << printed;
  EXPECT_EQ(print(*again), printed) << name << ": printing is not a fixed point";
}

TEST(PtxPrinter, RoundTripsEverySample) {
  for (const auto& s : allSamples()) expectRoundTrip(s.text, s.name);
}

TEST(PtxPrinter, PrintsCanonicalText) {
  const char* in =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".func  (.param .b32 func_retval0) h(\n  .param .b32 h_param_0\n)\n"
      "{ .reg .b32 %r<3>; ld.param.u32 %r1, [h_param_0]; st.param.b32 [func_retval0+0], %r1; ret; }\n"
      ".visible .entry k( .param .u64 k_p ) .maxntid 4, 1, 1\n{\n"
      "  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<3>;\n"
      "  .shared .align 4 .b8 tile[64];\n"
      "  ld.param.u64 %rd1, [k_p];\n"
      "  mov.u32 %r1, 0x1c1f;\n"
      "  shfl.sync.down.b32 %r2|%p1, %r1, 1, %r1, -1;\n"
      "  @!%p1 bra $L__BB0_2;\n"
      "  { // callseq 0, 0\n  .param .b32 param0;\n  .param .b32 retval0;\n"
      "  st.param.b32 [param0+0], %r2;\n  call.uni (retval0),\n h,\n (\n param0\n );\n"
      "  ld.param.b32 %r3, [retval0+0];\n  }\n"
      "  st.shared.u32 [tile+-4], %r3;\n"
      "$L__BB0_2:\n  ret;\n}\n";
  auto m = parse(in, "in.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  // Expected text written by hand: PTX order of modifiers, decimal immediates, ranges folded,
  // declarations at the top of their scope, tab before operands.
  const char* expected =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      "\n.func (.param .b32 func_retval0) h(\n\t.param .b32 h_param_0\n)\n"
      "{\n\t.reg .b32 %r<3>;\n\tld.param.u32\t%r1, [h_param_0];\n"
      "\tst.param.b32\t[func_retval0], %r1;\n\tret;\n}\n"
      "\n.visible .entry k(\n\t.param .u64 k_p\n)\n"
      "{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n"
      "\t.shared .align 4 .b8 tile[64];\n"
      "\tld.param.u64\t%rd1, [k_p];\n"
      "\tmov.u32\t%r1, 7199;\n"
      "\tshfl.sync.down.b32\t%r2|%p1, %r1, 1, %r1, -1;\n"
      "\t@!%p1 bra\t$L__BB0_2;\n"
      "\t{\n\t\t.param .b32 param0;\n\t\t.param .b32 retval0;\n"
      "\t\tst.param.b32\t[param0], %r2;\n"
      "\t\tcall.uni\t(retval0), h, (param0);\n"
      "\t\tld.param.b32\t%r3, [retval0];\n\t}\n"
      "\tst.shared.u32\t[tile+-4], %r3;\n"
      "$L__BB0_2:\n\tret;\n}\n";
  EXPECT_EQ(print(*m), expected);
}

TEST(PtxPrinter, RoundTripsScopesLabelsAndCallsAtEdges) {
  const char* head = ".version 6.4\n.target sm_75\n.address_size 64\n";
  // Labels at scope boundaries and at the very end, empty and sibling scopes, shadowing,
  // a register without '%', a call without results or arguments, a prototype.
  std::string text = std::string(head) +
                     ".func g;\n"
                     ".func g()\n{\nret;\n}\n"
                     ".entry k()\n{\n.reg .b32 %r<2>;\n.reg .b32 %r7;\n"
                     "L0:\n{\n}\n{\n.reg .b32 %r1;\n.reg .pred t;\nL1:\nmov.u32 %r1, 1;\n"
                     "{\n.reg .b32 %r1;\nmov.u32 %r1, 2;\n}\nsetp.eq.s32 t, %r1, 1;\n@t bra L0;\n}\n"
                     "mov.u32 %r1, 3;\ncall.uni g;\n{\nL2:\n}\nL3:\n}\n";
  expectRoundTrip(text, "edges.ptx");
  auto m = parse(text, "edges.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  const Function& k = m->functions.at(1);
  EXPECT_EQ(k.labels.at("L3"), k.body.size());
  EXPECT_EQ(k.scopes.size(), 5u);
}

TEST(PtxPrinter, DetectsADifferenceAfterRoundTrip) {
  // Failing twin of the round-trip check: a module changed after printing is reported.
  auto m = parse(testing::readSample("vector_add.nvcc.ptx"), "a.ptx");
  ASSERT_TRUE(m.ok());
  auto again = parse(print(*m), "b.ptx");
  ASSERT_TRUE(again.ok());
  again->functions[0].body[3].srcs[0].imm = 4;
  auto diff = firstDifference(*m, *again);
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("body[3]"), std::string::npos) << *diff;
}

}  // namespace
}  // namespace qgpu::ptx
