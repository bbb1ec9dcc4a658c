// qgpu/host/lower/tests/translate_values_test.cpp — the value facts the translator relies on:
// valueBounds() on hand-worked cases (each expected bound derived in its comment from the rules
// in docs/lowering.md, "Sound narrowing"), and the ValueMap's refusal of a 64-bit definition
// whose demanded high half was never written, with its twin.
#include <gtest/gtest.h>

#include "host/lower/translate.h"
#include "host/ptx/parser.h"

namespace qgpu::lower::tr {
namespace {

// Registers: %r1..%r9 are ids 0..8 (.b32), %rd1..%rd9 ids 9..17 (.b64), as declared.
FlatFunction flat(const std::string& body, uint32_t param = 16) {
  std::string text = ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
                     ".reg .b32 %r<10>;\n.reg .b64 %rd<10>;\n.reg .pred %p<3>;\n" + body + "\nret;\n}\n";
  auto module = ptx::parse(text, "<test>");
  EXPECT_TRUE(module.ok()) << module.error().str();
  LowerOptions opt;
  opt.params = {param};
  auto f = flatten(*module, opt);
  EXPECT_TRUE(f.ok()) << f.error().str();
  return *f;
}

int regId(const FlatFunction& f, const std::string& name) {
  for (size_t i = 0; i < f.regs.size(); ++i)
    if (f.regs[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no register " << name;
  return 0;
}

TEST(ValueBounds, HandWorkedCases) {
  FlatFunction f = flat(
      "ld.param.u64 %rd1, [k_param_0];\n"  // 16 = 0b10000: 5 bits
      "mov.u32 %r1, %tid.x;\n"             // tid < 16: 4 bits
      "mul.wide.u32 %rd2, %r1, 4;\n"       // 4 + 3 (4 = 0b100) = 7
      "add.s64 %rd3, %rd1, %rd2;\n"        // max(5, 7) + 1 = 8
      "ld.global.u32 %r2, [%rd3];\n"       // a 32-bit load: 32
      "cvt.u64.u32 %rd4, %r2;\n"           // zero extension: 32
      "cvt.s64.s32 %rd5, %r2;\n"           // sign extension of a full-width value: 64
      "cvt.s64.s32 %rd6, %r1;\n"           // sign extension of a non-negative value: 4
      "shr.u32 %r3, %r2, 20;\n"            // 32 - 20 = 12
      "and.b32 %r4, %r2, 255;\n"           // min(32, 8) = 8
      "mov.u32 %r5, 0;\nL:\nadd.s32 %r5, %r5, 1;\nsetp.lt.u32 %p1, %r5, 9;\n@%p1 bra L;\n"  // a loop counter: 32
      "sub.s32 %r6, %r1, 1;\n");           // subtraction may go negative: 32
  auto b = valueBounds(f);
  EXPECT_EQ(b[regId(f, "%rd1")], 5);
  EXPECT_EQ(b[regId(f, "%r1")], 4);
  EXPECT_EQ(b[regId(f, "%rd2")], 7);
  EXPECT_EQ(b[regId(f, "%rd3")], 8);
  EXPECT_EQ(b[regId(f, "%r2")], 32);
  EXPECT_EQ(b[regId(f, "%rd4")], 32);
  EXPECT_EQ(b[regId(f, "%rd5")], 64);
  EXPECT_EQ(b[regId(f, "%rd6")], 4);
  EXPECT_EQ(b[regId(f, "%r3")], 12);
  EXPECT_EQ(b[regId(f, "%r4")], 8);
  EXPECT_EQ(b[regId(f, "%r5")], 32);
  EXPECT_EQ(b[regId(f, "%r6")], 32);
}

TEST(ValueMap, RefusesADemandedHighHalfThatWasNotWritten) {
  // %rd2 = sext(load) has a possibly non-zero high half, and it is an address: demanded.
  FlatFunction f = flat("ld.global.u32 %r1, [%rd9];\ncvt.s64.s32 %rd2, %r1;\nst.global.u32 [%rd2], %r1;");
  VFunc out;
  ValueMap vals;
  vals.init(f, out);
  const ptx::Instruction& def = f.body[1];  // the cvt
  Dest d = vals.define(def.dsts[0].reg);
  ASSERT_TRUE(d.wantsHi());
  auto st = vals.finish(def, f);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(st.error().message.find("%rd2 is computed here only to 32 bits"), std::string::npos) << st.error().str();
  // The twin: taking the high vreg (the translator then writes it) completes the definition.
  Dest d2 = vals.define(def.dsts[0].reg);
  EXPECT_NE(d2.hi(), kNone);
  EXPECT_TRUE(vals.finish(def, f).ok());
}

TEST(ValueMap, ProvablySmallValuesHaveNoHighHalf) {
  // %rd2 = tid * 4 is < 2^6: its high half is zero, so even as an address it wants none.
  FlatFunction f = flat("mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nst.global.u32 [%rd2], %r1;");
  VFunc out;
  ValueMap vals;
  vals.init(f, out);
  EXPECT_FALSE(vals.define(f.body[1].dsts[0].reg).wantsHi());
  EXPECT_TRUE(vals.finish(f.body[1], f).ok());
}

}  // namespace
}  // namespace qgpu::lower::tr
