// qgpu/host/ptx/tests/parser_test.cpp — the parser on real compiler output, the IR it builds
// (spot checks whose expected values are read off the committed .ptx files by hand) and its
// syntax/unsupported errors with their locations.
#include "host/ptx/parser.h"
#include "host/ptx/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

using ::testing::HasSubstr;
using testing::allSamples;
using testing::readSample;

Module mustParse(const std::string& text, const std::string& name = "<test>") {
  auto m = parse(text, name);
  EXPECT_TRUE(m.ok()) << name << ": " << (m.ok() ? "" : m.error().str());
  return m.ok() ? std::move(m).value() : Module{};
}

const Function& fn(const Module& m, const std::string& name) {
  for (const Function& f : m.functions)
    if (f.name == name) return f;
  ADD_FAILURE() << "no function " << name;
  static Function none;
  return none;
}

// A kernel around `body`; body line N is file line kBodyLine + N - 1.
constexpr uint32_t kBodyLine = 11;
std::string kernel(const std::string& body) {
  return ".version 6.4\n"
         ".target sm_75\n"
         ".address_size 64\n"
         ".visible .entry k(\n"
         ".param .u64 k_param_0\n"
         ")\n"
         "{\n"
         ".reg .pred %p<3>;\n"
         ".reg .b32 %r<10>;\n"
         ".reg .b64 %rd<10>;\n" +
         body + "}\n";
}

Instruction only(const std::string& body) {
  Module m = mustParse(kernel(body));
  if (m.functions.size() != 1 || m.functions[0].body.empty()) return Instruction{};
  return m.functions[0].body[0];
}

// ---- real compiler output ----

TEST(PtxParser, ParsesEverySample) {
  auto samples = allSamples();
  ASSERT_GE(samples.size(), 24u);
  for (const auto& s : samples) {
    auto m = parse(s.text, s.name);
    EXPECT_TRUE(m.ok()) << s.name << ": " << (m.ok() ? "" : m.error().str());
  }
}

TEST(PtxParser, ReadsHeaderOfBothDialects) {
  Module c = mustParse(readSample("vector_add.clang.ptx"));
  Module n = mustParse(readSample("vector_add.nvcc.ptx"));
  EXPECT_EQ(c.version, "6.4");
  EXPECT_EQ(n.version, "9.0");
  EXPECT_EQ(n.target, "sm_75");
  EXPECT_EQ(n.addressSize, 64);
}

TEST(PtxParser, MapsNvccLabelToNextInstructionAndResolvesGuard) {
  Module m = mustParse(readSample("vector_add.nvcc.ptx"));
  const Function& f = fn(m, "_Z10vector_addPKiS0_Pii");
  EXPECT_TRUE(f.isEntry);
  EXPECT_TRUE(f.visible);
  ASSERT_EQ(f.params.size(), 4u);
  EXPECT_EQ(f.params[3].type, Type::U32);
  ASSERT_EQ(f.body.size(), 22u);
  ASSERT_EQ(f.labels.count("$L__BB0_2"), 1u);
  EXPECT_EQ(f.labels.at("$L__BB0_2"), 21u);
  EXPECT_EQ(f.body[21].op, Opcode::Ret);
  const Instruction& bra = f.body[9];
  EXPECT_EQ(bra.op, Opcode::Bra);
  EXPECT_TRUE(bra.guarded);
  EXPECT_FALSE(bra.guardNegated);
  EXPECT_EQ(bra.guardReg, 1u);  // %p<2> declares %p0 (id 0), %p1 (id 1)
  EXPECT_EQ(f.regs[1].name, "%p1");
  ASSERT_EQ(bra.srcs.size(), 1u);
  EXPECT_EQ(bra.srcs[0].kind, OperandKind::Symbol);
  EXPECT_EQ(bra.srcs[0].name, "$L__BB0_2");
  EXPECT_EQ(bra.loc.line, 36u);
  EXPECT_EQ(bra.loc.column, 2u);  // after one tab
  EXPECT_EQ(bra.text, "@%p1 bra $L__BB0_2;");
  EXPECT_TRUE(f.body[11].mods.wide);
  EXPECT_EQ(f.body[11].types, std::vector<Type>{Type::S32});
  EXPECT_EQ(f.body[4].srcs[0].kind, OperandKind::Special);
  EXPECT_EQ(f.body[4].srcs[0].name, "%ctaid.x");
}

TEST(PtxParser, GivesShadowingScopedRegistersTheirOwnIds) {
  Module m = mustParse(readSample("sync_count.nvcc.ptx"));
  const Function& f = fn(m, "_Z10sync_countPKiPi");
  // %r<9> -> ids 0..8, %rd<8> -> 9..16, then scope 1: %p1 (17); scope 2: %p1 (18), %p2 (19);
  // scope 3: %p1 (20), %p2 (21).
  ASSERT_EQ(f.regs.size(), 22u);
  EXPECT_EQ(f.regs[17].name, "%p1");
  EXPECT_EQ(f.regs[18].name, "%p1");
  EXPECT_EQ(f.regs[17].scopeDepth, 1u);
  EXPECT_EQ(f.regs[17].scope, 1u);
  EXPECT_EQ(f.regs[18].scope, 2u);
  EXPECT_EQ(f.regs[8].scopeDepth, 0u);
  ASSERT_EQ(f.scopes.size(), 4u);
  EXPECT_EQ(f.scopes[1].parent, 0u);
  EXPECT_EQ(f.scopes[1].end - f.scopes[1].begin, 2u);  // setp + bar.red
  const Instruction& setp = f.body[f.scopes[1].begin];
  EXPECT_EQ(setp.loc.line, 35u);
  EXPECT_EQ(setp.dsts[0].reg, 17u);
  const Instruction& popc = f.body[f.scopes[1].begin + 1];
  EXPECT_EQ(popc.op, Opcode::Bar);
  EXPECT_EQ(popc.mods.sub, "red.popc");
  EXPECT_EQ(popc.types, std::vector<Type>{Type::U32});
  EXPECT_EQ(popc.srcs[1].reg, 17u);
  EXPECT_EQ(f.body[f.scopes[2].begin].dsts[0].reg, 18u);
}

TEST(PtxParser, ReadsCallSequenceSpanningLines) {
  Module m = mustParse(readSample("helper_call.clang.ptx"));
  const Function& helper = fn(m, "_Z6helperi");
  EXPECT_FALSE(helper.isEntry);
  EXPECT_TRUE(helper.visible);
  ASSERT_EQ(helper.returns.size(), 1u);
  EXPECT_EQ(helper.returns[0].name, "func_retval0");
  const Function& k = fn(m, "_Z11helper_callPKiPi");
  const Instruction* call = nullptr;
  for (const Instruction& in : k.body)
    if (in.op == Opcode::Call && !call) call = &in;
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->loc.line, 45u);
  EXPECT_TRUE(call->mods.uni);
  ASSERT_EQ(call->dsts.size(), 1u);
  ASSERT_EQ(call->dsts[0].kind, OperandKind::List);
  ASSERT_EQ(call->dsts[0].items.size(), 1u);
  EXPECT_EQ(call->dsts[0].items[0].name, "retval0");
  ASSERT_EQ(call->srcs.size(), 2u);
  EXPECT_EQ(call->srcs[0].kind, OperandKind::Symbol);
  EXPECT_EQ(call->srcs[0].name, "_Z6helperi");
  ASSERT_EQ(call->srcs[1].items.size(), 1u);
  EXPECT_EQ(call->srcs[1].items[0].name, "param0");
  EXPECT_EQ(call->text, "call.uni (retval0), _Z6helperi, (param0);");
  // Both call scopes declare param0 and retval0; both are recorded with their scope.
  ASSERT_EQ(k.callParams.size(), 4u);
  EXPECT_EQ(k.callParams[0].scope, 1u);
  EXPECT_EQ(k.callParams[2].scope, 2u);
  // `.reg .b32 temp_param_reg;` is a register without '%'.
  bool found = false;
  for (const RegInfo& r : k.regs) found = found || (r.name == "temp_param_reg" && r.scopeDepth == 1);
  EXPECT_TRUE(found);
}

TEST(PtxParser, ReadsDualDestinationOfNvccShfl) {
  Module m = mustParse(readSample("warp_shuffle.nvcc.ptx"));
  const Function& f = m.functions.at(0);
  const Instruction* shfl = nullptr;
  for (const Instruction& in : f.body)
    if (in.op == Opcode::Shfl && !shfl) shfl = &in;
  ASSERT_NE(shfl, nullptr);
  EXPECT_EQ(shfl->loc.line, 36u);
  ASSERT_EQ(shfl->dsts.size(), 2u);
  EXPECT_EQ(f.regs[shfl->dsts[0].reg].name, "%r6");
  EXPECT_EQ(f.regs[shfl->dsts[1].reg].name, "%p1");
  EXPECT_EQ(shfl->srcs.size(), 4u);
  EXPECT_TRUE(shfl->mods.sync);
  EXPECT_EQ(shfl->mods.sub, "down");
}

TEST(PtxParser, ReadsDemotedSharedArray) {
  Module m = mustParse(readSample("shared_reduce.clang.ptx"));
  const Function& f = m.functions.at(0);
  ASSERT_EQ(f.shared.size(), 1u);
  EXPECT_EQ(f.shared[0].align, 4u);
  EXPECT_EQ(f.shared[0].type, Type::B8);
  EXPECT_EQ(f.shared[0].bytes, 64u);  // int tile[16]
}

// ---- modifiers, decoded as ir.h documents ----

struct ModCase {
  const char* statement;
  Opcode op;
  std::vector<Type> types;
  Modifiers mods;
};

TEST(PtxParser, DecodesModifiersAsDocumented) {
  auto mods = [](auto set) {
    Modifiers m;
    set(m);
    return m;
  };
  const ModCase cases[] = {
      {"ld.global.nc.u32 %r1, [%rd1];", Opcode::Ld, {Type::U32},
       mods([](Modifiers& m) { m.space = StateSpace::Global, m.nc = true; })},
      {"ld.u32 %r1, [%rd1];", Opcode::Ld, {Type::U32}, Modifiers{}},
      {"atom.global.add.u32 %r1, [%rd1], 1;", Opcode::Atom, {Type::U32},
       mods([](Modifiers& m) { m.space = StateSpace::Global, m.sub = "add", m.atom = AtomOp::Add; })},
      {"atom.inc.u32 %r1, [%rd1], 7;", Opcode::Atom, {Type::U32},
       mods([](Modifiers& m) { m.sub = "inc", m.atom = AtomOp::Inc; })},
      {"atom.shared.cas.b32 %r1, [%rd1], %r2, %r3;", Opcode::Atom, {Type::B32},
       mods([](Modifiers& m) { m.space = StateSpace::Shared, m.sub = "cas", m.atom = AtomOp::Cas; })},
      {"shfl.sync.down.b32 %r1, %r2, 1, 31, -1;", Opcode::Shfl, {Type::B32},
       mods([](Modifiers& m) { m.sync = true, m.sub = "down", m.shfl = ShflMode::Down; })},
      {"vote.sync.ballot.b32 %r1, %p1, -1;", Opcode::Vote, {Type::B32},
       mods([](Modifiers& m) { m.sync = true, m.sub = "ballot", m.vote = VoteMode::Ballot; })},
      {"bar.red.popc.u32 %r1, 0, %p1;", Opcode::Bar, {Type::U32},
       mods([](Modifiers& m) { m.sub = "red.popc", m.barrier = BarrierKind::RedPopc; })},
      {"bar.sync 0;", Opcode::Bar, {}, mods([](Modifiers& m) { m.sync = true; })},
      {"barrier.sync 0;", Opcode::Barrier, {}, mods([](Modifiers& m) { m.sync = true; })},
      {"barrier.sync.aligned 0;", Opcode::Barrier, {},
       mods([](Modifiers& m) { m.sync = true, m.aligned = true; })},
      {"bar.warp.sync -1;", Opcode::Bar, {}, mods([](Modifiers& m) { m.sync = true, m.sub = "warp", m.barrier = BarrierKind::Warp; })},
      {"mul.wide.s32 %rd1, %r1, 4;", Opcode::Mul, {Type::S32}, mods([](Modifiers& m) { m.wide = true; })},
      {"mul.lo.s32 %r1, %r1, 4;", Opcode::Mul, {Type::S32}, mods([](Modifiers& m) { m.lo = true; })},
      {"mul.hi.u32 %r1, %r1, -858993459;", Opcode::Mul, {Type::U32}, mods([](Modifiers& m) { m.hi = true; })},
      {"mad.lo.s32 %r1, %r1, 4, %r2;", Opcode::Mad, {Type::S32}, mods([](Modifiers& m) { m.lo = true; })},
      {"setp.lt.s32 %p1, %r1, %r2;", Opcode::Setp, {Type::S32}, mods([](Modifiers& m) { m.cmp = CmpOp::Lt; })},
      {"setp.hs.u32 %p1, %r1, %r2;", Opcode::Setp, {Type::U32}, mods([](Modifiers& m) { m.cmp = CmpOp::Hs; })},
      {"cvt.u64.u32 %rd1, %r1;", Opcode::Cvt, {Type::U64, Type::U32}, Modifiers{}},
      {"cvta.to.global.u64 %rd1, %rd2;", Opcode::Cvta, {Type::U64},
       mods([](Modifiers& m) { m.toSpace = true, m.space = StateSpace::Global; })},
      {"shf.l.wrap.b32 %r1, %r2, %r2, 5;", Opcode::Shf, {Type::B32},
       mods([](Modifiers& m) { m.left = true, m.wrap = true; })},
      {"bfind.shiftamt.u32 %r1, %r2;", Opcode::Bfind, {Type::U32}, mods([](Modifiers& m) { m.shiftamt = true; })},
      {"bra.uni LEND;", Opcode::Bra, {}, mods([](Modifiers& m) { m.uni = true; })},
      {"st.shared.u32 [%rd1+4], %r1;", Opcode::St, {Type::U32},
       mods([](Modifiers& m) { m.space = StateSpace::Shared; })},
      {"activemask.b32 %r1;", Opcode::Activemask, {Type::B32}, Modifiers{}},
      {"bar.red.or.pred %p1, 0, %p2;", Opcode::Bar, {Type::Pred},
       mods([](Modifiers& m) { m.sub = "red.or", m.barrier = BarrierKind::RedOr; })},
      {"vote.sync.all.pred %p1, %p2, -1;", Opcode::Vote, {Type::Pred},
       mods([](Modifiers& m) { m.sync = true, m.sub = "all", m.vote = VoteMode::All; })},
      {"shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;", Opcode::Shfl, {Type::B32},
       mods([](Modifiers& m) { m.sync = true, m.sub = "bfly", m.shfl = ShflMode::Bfly; })},
      {"atom.global.exch.b32 %r1, [%rd1], %r2;", Opcode::Atom, {Type::B32},
       mods([](Modifiers& m) { m.space = StateSpace::Global, m.sub = "exch", m.atom = AtomOp::Exch; })},
  };
  for (const ModCase& c : cases) {
    Instruction in = only(std::string(c.statement) + "\nLEND:\nret;\n");
    SCOPED_TRACE(c.statement);
    EXPECT_EQ(in.op, c.op);
    EXPECT_EQ(in.types, c.types);
    EXPECT_EQ(in.mods.space, c.mods.space);
    EXPECT_EQ(in.mods.sub, c.mods.sub);
    EXPECT_EQ(in.mods.atom, c.mods.atom);
    EXPECT_EQ(in.mods.shfl, c.mods.shfl);
    EXPECT_EQ(in.mods.vote, c.mods.vote);
    EXPECT_EQ(in.mods.barrier, c.mods.barrier);
    EXPECT_EQ(in.mods.cmp, c.mods.cmp);
    EXPECT_EQ(in.mods.nc, c.mods.nc);
    EXPECT_EQ(in.mods.sync, c.mods.sync);
    EXPECT_EQ(in.mods.aligned, c.mods.aligned);
    EXPECT_EQ(in.mods.wide, c.mods.wide);
    EXPECT_EQ(in.mods.lo, c.mods.lo);
    EXPECT_EQ(in.mods.hi, c.mods.hi);
    EXPECT_EQ(in.mods.toSpace, c.mods.toSpace);
    EXPECT_EQ(in.mods.left, c.mods.left);
    EXPECT_EQ(in.mods.wrap, c.mods.wrap);
    EXPECT_EQ(in.mods.shiftamt, c.mods.shiftamt);
    EXPECT_EQ(in.mods.uni, c.mods.uni);
  }
}

// ---- operands ----

TEST(PtxParser, ReadsAddressesWithSignedOffsets) {
  Module m = mustParse(kernel(".shared .align 4 .b8 tile[64];\n"
                              "ld.global.u32 %r1, [%rd4+-4];\n"
                              "ld.global.u32 %r1, [%rd4-8];\n"
                              "ld.global.u32 %r1, [%rd4+8];\n"
                              "ld.shared.u32 %r1, [tile];\n"
                              "ld.shared.u32 %r1, [tile+4];\n"
                              "ld.param.u64 %rd1, [k_param_0];\n"
                              "ret;\n"));
  const auto& b = m.functions.at(0).body;
  ASSERT_EQ(b.size(), 7u);
  EXPECT_TRUE(b[0].srcs[0].addrIsReg);
  EXPECT_EQ(b[0].srcs[0].reg, 17u);  // %p<3>: 0..2, %r<10>: 3..12, %rd<10>: 13.., %rd4 = 17
  EXPECT_EQ(b[0].srcs[0].imm, -4);
  EXPECT_EQ(b[1].srcs[0].imm, -8);
  EXPECT_EQ(b[2].srcs[0].imm, 8);
  EXPECT_FALSE(b[3].srcs[0].addrIsReg);
  EXPECT_EQ(b[3].srcs[0].name, "tile");
  EXPECT_EQ(b[3].srcs[0].imm, 0);
  EXPECT_EQ(b[4].srcs[0].imm, 4);
  EXPECT_EQ(b[5].srcs[0].name, "k_param_0");
}

TEST(PtxParser, ReadsImmediatesInEveryRadix) {
  auto imm = [](const std::string& text) {
    Instruction in = only("mov.u64 %rd1, " + text + ";\nret;\n");
    EXPECT_EQ(in.srcs.size(), 1u) << text;
    return in.srcs.empty() ? int64_t{-12345} : in.srcs[0].imm;
  };
  EXPECT_EQ(imm("-858993459"), -858993459);
  EXPECT_EQ(imm("17179869176"), 17179869176);
  EXPECT_EQ(imm("0x1c1f"), 7199);
  EXPECT_EQ(imm("0X1C00"), 7168);
  EXPECT_EQ(imm("017"), 15);
  EXPECT_EQ(imm("0b101"), 5);
  EXPECT_EQ(imm("0"), 0);
  EXPECT_EQ(imm("42U"), 42);
  EXPECT_EQ(imm("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(imm("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(imm("0xFFFFFFFFFFFFFFFF"), -1);  // a 64-bit bit pattern
  EXPECT_EQ(imm("-0x10"), -16);
}

TEST(PtxParser, ReadsSpecialRegistersAndWarpSize) {
  Module m = mustParse(kernel("mov.u32 %r1, %tid.x;\nmov.u32 %r1, %ntid.y;\nmov.u32 %r1, %laneid;\n"
                              "mov.u32 %r1, WARP_SZ;\nmov.u32 %r1, %nctaid.z;\nret;\n"));
  const auto& b = m.functions.at(0).body;
  ASSERT_EQ(b.size(), 6u);
  const char* names[] = {"%tid.x", "%ntid.y", "%laneid", "WARP_SZ", "%nctaid.z"};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b[i].srcs[0].kind, OperandKind::Special);
    EXPECT_EQ(b[i].srcs[0].name, names[i]);
  }
}

TEST(PtxParser, AcceptsNegatedGuardCommentsPragmasAndPerformanceDirectives) {
  std::string text =
      "/* block\n comment */ .version 9.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u64 p) .maxntid 64, 1, 1 .reqntid 64 .minnctapersm 2\n"
      "{\n.reg .pred %p<2>;\n.reg .b32 %r<3>;\n"
      "L1:\n.pragma \"nounroll\";\n"
      "// begin inline asm\n"
      "@!%p1 bra L1; /* trailing */\n"
      "ret;\n}\n";
  Module m = mustParse(text);
  const Function& f = m.functions.at(0);
  ASSERT_EQ(f.body.size(), 2u);
  EXPECT_TRUE(f.body[0].guardNegated);
  EXPECT_EQ(f.body[0].loc.line, 12u);
  EXPECT_EQ(f.labels.at("L1"), 0u);
  EXPECT_EQ(m.addressSize, 64);
}

// ---- errors: kind, line, column, and a message that names the construct ----

void expectError(const std::string& text, ErrorKind kind, uint32_t line, uint32_t column,
                 const std::string& mention) {
  auto m = parse(text, "t.ptx");
  ASSERT_FALSE(m.ok()) << "parsed:\n" << text;
  const Diag& d = m.error();
  EXPECT_EQ(d.kind, kind) << d.str();
  EXPECT_EQ(d.loc.file, "t.ptx");
  EXPECT_EQ(d.loc.line, line) << d.str();
  if (column) {
    EXPECT_EQ(d.loc.column, column) << d.str();
  }
  EXPECT_THAT(d.message, HasSubstr(mention)) << d.str();
}

TEST(PtxParser, RejectsUnknownOpcode) {
  expectError(kernel("fma.rn.f32 %r1, %r2, %r3, %r4;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1,
              "unsupported PTX opcode 'fma' at line 11");
}

TEST(PtxParser, RefusedOpcodeQuotesTheStatement) {
  // The refusal names the opcode, its line and the whole statement up to its ';'.
  expectError(kernel("fma.rn.f32 %r1, %r2, %r3, %r4;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1,
              "unsupported PTX opcode 'fma' at line 11 in `fma.rn.f32 %r1, %r2, %r3, %r4;`");
  expectError(kernel("@%p1 vabsdiff.u32.u32.u32 %r1, %r2, %r3;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 0,
              "in `@%p1 vabsdiff.u32.u32.u32 %r1, %r2, %r3;`");
  // An unsupported modifier is quoted the same way.
  expectError(kernel("add.sat.s32 %r1, %r2, %r3;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1,
              "in `add.sat.s32 %r1, %r2, %r3;`");
}

TEST(PtxParser, ParsesBfi) {
  auto m = ptx::parse(kernel("bfi.b32 %r1, %r2, %r3, 8, %r4;\nret;\n"), "t.ptx");
  ASSERT_TRUE(m.ok()) << m.error().str();
  const auto& in = m->functions[0].body[0];
  EXPECT_EQ(in.op, Opcode::Bfi);
  EXPECT_EQ(in.srcs.size(), 4u);
}

TEST(PtxParser, RejectsFloatType) {
  expectError(kernel("ret;\nadd.f32 %r1, %r2, %r3;\n"), ErrorKind::PtxUnsupported, kBodyLine + 1, 1,
              "float type '.f32' in 'add.f32' at line 12");
  expectError(kernel(".reg .f32 %f<2>;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 6, "'.f32'");
}

TEST(PtxParser, RejectsFloatImmediate) {
  expectError(kernel("mov.b32 %r1, 0f3F800000;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 14,
              "floating-point immediate '0f3F800000'");
}

TEST(PtxParser, RejectsUnknownModifier) {
  expectError(kernel("add.sat.s32 %r1, %r2, %r3;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1,
              "unsupported modifier '.sat' on 'add'");
  expectError(kernel("ld.volatile.volatile.global.u32 %r1, [%rd1];\nret;\n"), ErrorKind::PtxUnsupported,
              kBodyLine, 1, "'.volatile'");  // once is a plain access; twice is refused
  expectError(kernel("membar.gpu;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1, "'.gpu' on 'membar'");
  expectError(kernel("mul24.wide.u32 %r1, %r2, %r3;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 1,
              "'.wide' on 'mul24'");
}

TEST(PtxParser, RejectsMissingSemicolon) {
  expectError(kernel("add.s32 %r1, %r2, %r3\nret;\n"), ErrorKind::PtxSyntax, kBodyLine + 1, 1,
              "expected ';' to end 'add.s32 %r1, %r2, %r3', found 'ret'");
}

TEST(PtxParser, RejectsUnterminatedComment) {
  expectError(kernel("ret;\n  /* never closed\n"), ErrorKind::PtxSyntax, kBodyLine + 1, 3,
              "unterminated '/*' comment");
}

TEST(PtxParser, RejectsUnterminatedScope) {
  std::string text = kernel("{\n.reg .pred %p1;\nret;\n");
  text.pop_back();  // drop "}\n" -> the inner '{' is never closed
  text.pop_back();
  // End of input is reported where it is: line 14, column 1 (after the last newline).
  expectError(text, ErrorKind::PtxSyntax, kBodyLine + 3, 1, "'{' opened at line 11 is not closed");
}

TEST(PtxParser, RejectsUndeclaredRegister) {
  expectError(kernel("add.s32 %r1, %r2, %q7;\nret;\n"), ErrorKind::PtxInvalid, kBodyLine, 19,
              "undeclared register '%q7'");
  // %r10 is one past %r<10>.
  expectError(kernel("mov.u32 %r10, 1;\nret;\n"), ErrorKind::PtxInvalid, kBodyLine, 9,
              "undeclared register '%r10'");
}

TEST(PtxParser, RejectsRegisterOfAClosedScope) {
  expectError(kernel("{\n.reg .b32 %tmp;\nmov.u32 %tmp, 1;\n}\nmov.u32 %r1, %tmp;\nret;\n"),
              ErrorKind::PtxInvalid, kBodyLine + 4, 14, "undeclared register '%tmp'");
}

TEST(PtxParser, RejectsDuplicateLabel) {
  expectError(kernel("L1:\nret;\nL1:\nret;\n"), ErrorKind::PtxInvalid, kBodyLine + 2, 1,
              "duplicate label 'L1' (first defined at line 11)");
}

TEST(PtxParser, RejectsDuplicateRegisterInOneScope) {
  expectError(kernel(".reg .b32 %r3;\nret;\n"), ErrorKind::PtxInvalid, kBodyLine, 11,
              "register '%r3' is declared twice");
}

TEST(PtxParser, RejectsBadImmediate) {
  expectError(kernel("mov.u32 %r1, 12abc;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine, 14,
              "malformed immediate '12abc'");
  expectError(kernel("mov.u32 %r1, 09;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine, 14,
              "malformed immediate '09'");
}

TEST(PtxParser, RejectsOutOfRangeImmediate) {
  expectError(kernel("mov.u64 %rd1, 9223372036854775808;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine,
              15, "'9223372036854775808' is out of the int64 range");
  expectError(kernel("mov.u64 %rd1, 0x10000000000000000;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine,
              15, "out of the 64-bit range");
  expectError(kernel("mov.u64 %rd1, -9223372036854775809;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine,
              15, "out of the int64 range");
}

TEST(PtxParser, RejectsTruncatedFile) {
  std::string text = readSample("vector_add.nvcc.ptx");
  size_t cut = text.find("add.s32");
  ASSERT_NE(cut, std::string::npos);
  std::string truncated = text.substr(0, cut + 7);  // ends inside the body: "... add.s32"
  uint32_t lines = 1;
  for (char c : truncated) lines += c == '\n';
  expectError(truncated, ErrorKind::PtxSyntax, lines, 0, "expected an operand, found end of file");
  std::string header = text.substr(0, text.find(".target") + 7);
  expectError(header, ErrorKind::PtxSyntax, 10, 8, "expected a target name, found end of file");
}

TEST(PtxParser, RejectsEmptyFile) {
  expectError("", ErrorKind::PtxSyntax, 1, 1, "empty PTX input");
  expectError("  // only a comment\n", ErrorKind::PtxSyntax, 2, 1, "empty PTX input");
}

TEST(PtxParser, RejectsGarbageBytes) {
  expectError(kernel("mov.u32 %r1, \x01;\nret;\n"), ErrorKind::PtxSyntax, kBodyLine, 14,
              "unexpected character '\\x01'");
  expectError(std::string("\xff\xfe.version", 10), ErrorKind::PtxSyntax, 1, 1, "'\\xff'");
}

TEST(PtxParser, ReadsFunctionLocalDepotsAndPrintsThem) {
  // clang-14 and nvcc's stack frame: a `.local` array in the body, addressed through %SPL.
  const Module m = mustParse(
      ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n"
      ".local .align 16 .b8 __local_depot0[32];\n.reg .b64 %SPL;\n.reg .b32 %r<2>;\n"
      "mov.u64 %SPL, __local_depot0;\nst.local.u32 [%SPL+4], %r1;\nld.local.u32 %r1, [__local_depot0+4];\nret;\n}\n");
  ASSERT_EQ(m.functions.size(), 1u);
  ASSERT_EQ(m.functions[0].locals.size(), 1u);
  EXPECT_EQ(m.functions[0].locals[0].name, "__local_depot0");
  EXPECT_EQ(m.functions[0].locals[0].bytes, 32u);
  EXPECT_EQ(m.functions[0].locals[0].align, 16u);
  const std::string printed = print(m);
  EXPECT_THAT(printed, HasSubstr(".local .align 16 .b8 __local_depot0[32];"));
  EXPECT_EQ(firstDifference(m, mustParse(printed)), std::nullopt);
}

TEST(PtxParser, RejectsModuleLevelVariables) {
  const char* head = ".version 6.4\n.target sm_75\n.address_size 64\n";
  // .global and .const variables parse (ReadsModuleGlobalsAndRefusesTheirUse below); .local not.
  expectError(std::string(head) + ".local .u32 l;\n", ErrorKind::PtxUnsupported, 4, 1,
              "module-level '.local' variable at line 4");
  expectError(std::string(head) + ".global .u32 g;\n.const .u32 g;\n", ErrorKind::PtxInvalid, 5, 1,
              "declared twice");
  expectError(std::string(head) + ".extern .shared .align 4 .b8 s[16];\n", ErrorKind::PtxUnsupported,
              4, 1, "only the unsized dynamic form");
  expectError(std::string(head) + ".visible .shared .align 4 .b8 s[];\n", ErrorKind::PtxUnsupported,
              4, 32, "unsized array 's[]'");
  expectError(std::string(head) + ".shared .u32 s;\n.weak .shared .u32 s;\n", ErrorKind::PtxInvalid, 5, 1,
              "declared twice");
}

// Module .global / .const variables — `__device__` data, and the unused objects libraries bring
// (nvcc's <cooperative_groups/reduce.h> declares libcu++'s customisation points this way) — parse,
// print back and are inert; a use is refused by name at the using instruction.
TEST(PtxParser, ReadsModuleGlobalsAndRefusesTheirUse) {
  const std::string head = ".version 6.4\n.target sm_75\n.address_size 64\n";
  const std::string entry = ".visible .entry k()\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n";
  Module m = mustParse(head +
                       ".global .align 1 .b8 _ZN4cuda3std3__45__cpo5beginE[1];\n"
                       ".visible .const .align 4 .u32 table[4] = {1, 2, 3, 4};\n"
                       ".extern .global .align 4 .b8 ext[];\n" +
                       entry + "mov.u32 %r1, 7;\nret;\n}\n");
  ASSERT_EQ(m.globals.size(), 3u);
  EXPECT_EQ(m.globals[0].linkage, ".global");
  EXPECT_EQ(m.globals[0].name, "_ZN4cuda3std3__45__cpo5beginE");
  EXPECT_EQ(m.globals[1].linkage, ".visible .const");
  EXPECT_EQ(m.globals[1].bytes, 16u);
  EXPECT_EQ(m.globals[2].linkage, ".extern .global");
  EXPECT_TRUE(m.globals[2].external);
  const std::string printed = print(m);
  EXPECT_THAT(printed, HasSubstr(".visible .const .align 4 .u32 table"));
  EXPECT_EQ(firstDifference(m, mustParse(printed)), std::nullopt);

  for (const std::string use : {"ld.global.u32 %r1, [counter];\n", "ld.global.u32 %r1, [counter+4];\n",
                                "mov.u64 %rd1, counter;\n"}) {
    auto bad = parse(head + ".global .align 4 .u32 counter[2];\n" + entry + use + "ret;\n}\n", "t.ptx");
    ASSERT_FALSE(bad.ok()) << use;
    EXPECT_EQ(bad.error().kind, ErrorKind::PtxUnsupported) << bad.error().str();
    EXPECT_EQ(bad.error().loc.line, 9u) << bad.error().str();
    EXPECT_THAT(bad.error().message,
                HasSubstr("module-level '.global' variable 'counter' (declared at line 4) is used"));
  }
}

// clang's module __shared__ (`.visible`), the SharedMemory<T> helper's (`.weak`), an internal
// one, and nvcc's and clang's `extern __shared__ T s[]` (`.extern`, unsized): all parse, print
// back with their linkage and are usable from a kernel.
TEST(PtxParser, ReadsModuleSharedVariables) {
  std::string text =
      ".version 6.4\n.target sm_75\n.address_size 64\n"
      ".visible .shared .align 4 .b8 a[32];\n"
      ".weak .shared .align 4 .u32 b;\n"
      ".shared .align 8 .b8 c[8];\n"
      ".extern .shared .align 16 .b8 dyn[];\n"
      ".visible .entry k()\n{\n.reg .b32 %r<3>;\n"
      "ld.shared.u32 %r1, [dyn+4];\nmov.u32 %r2, a;\nst.shared.u32 [b], %r1;\nret;\n}\n";
  Module m = mustParse(text);
  ASSERT_EQ(m.shared.size(), 4u);
  EXPECT_EQ(m.shared[0].linkage, ".visible");
  EXPECT_EQ(m.shared[0].bytes, 32u);
  EXPECT_EQ(m.shared[1].linkage, ".weak");
  EXPECT_EQ(m.shared[2].linkage, "");
  EXPECT_EQ(m.shared[2].align, 8u);
  EXPECT_TRUE(m.shared[3].external);
  EXPECT_EQ(m.shared[3].bytes, 0u);
  EXPECT_FALSE(m.shared[0].external);
  EXPECT_TRUE(verify(m).ok()) << verify(m).error().str();
  std::string printed = print(m);
  EXPECT_THAT(printed, HasSubstr(".extern .shared .align 16 .b8 dyn[];"));
  EXPECT_THAT(printed, HasSubstr(".weak .shared .align 4 .u32 b;"));
  Module again = mustParse(printed);
  EXPECT_EQ(firstDifference(m, again), std::nullopt);
}

TEST(PtxParser, RejectsDeepNesting) {
  std::string open(100000, '{');
  expectError(kernel(open), ErrorKind::PtxUnsupported, kBodyLine, kMaxScopeDepth + 1,
              "nested deeper than 64");
}

TEST(PtxParser, RejectsOversizedInput) {
  std::string big(kMaxInputBytes + 1, ' ');
  expectError(big, ErrorKind::PtxUnsupported, 1, 1, "at most 4194304");
}

TEST(PtxParser, RejectsHugeRegisterRange) {
  expectError(kernel(".reg .b32 %x<100000>;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine, 14,
              "register range");
}

TEST(PtxParser, RejectsRegisterDeclarationAfterInstructions) {
  expectError(kernel("ret;\n.reg .b32 %late;\n"), ErrorKind::PtxUnsupported, kBodyLine + 1, 1,
              "'.reg' declaration after instructions");
}

// Found by fuzz_ptx: a `.param` after a nested scope printed before it, so print() + parse() gave
// another module. The twin: the same declaration before the nested scope parses.
TEST(PtxParser, RejectsVariableDeclarationAfterANestedScope) {
  expectError(kernel("{\n}\n.param .b32 late;\nret;\n"), ErrorKind::PtxUnsupported, kBodyLine + 2,
              1, "'.param' declaration after a nested '{ }' scope");
  EXPECT_TRUE(parse(kernel(".param .b32 early;\n{\n}\nret;\n")).ok());
}

}  // namespace
}  // namespace qgpu::ptx
