// Tests for ptxeval/eval.cpp: PTX semantics on hand-written PTX. Every expected value is worked out
// by hand in the comments (never computed by the evaluator, nor by oracle/ or host/lower/).
#include "ptxeval/eval.h"

#include <gtest/gtest.h>

#include "host/ptx/parser.h"

namespace qgpu::ptxeval {
namespace {

// One entry `k(out)`: %rd2 = out (a byte address), %r1 = %tid.x, %rd4 = &out[tid].
std::string kernel(const std::string& body, const std::string& extraDecls = "") {
  return ".version 9.0\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
         "\t.reg .pred %p<8>;\n\t.reg .b16 %rs<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n" +
         extraDecls +
         "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
         "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n" +
         body + "\tret;\n}\n";
}

Expected<EvalResult> evalText(const std::string& text, uint32_t blockX = 1, uint64_t out = 0,
                              std::array<uint32_t, kGlobalWords> global = {}, uint64_t maxInstr = 1u << 20) {
  auto m = ptx::parse(text, "test.ptx");
  if (!m) return m.error();
  Launch l;
  l.blockX = blockX;
  l.global = global;
  l.params = {out};
  EvalOptions o;
  o.maxInstructions = maxInstr;
  return evaluate(*m, l, o);
}

EvalResult evalOk(const std::string& text, uint32_t blockX = 1, uint64_t out = 0,
                  std::array<uint32_t, kGlobalWords> global = {}) {
  auto r = evalText(text, blockX, out, global);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  EXPECT_EQ(r->status, EvalStatus::Finished) << r->fault.str();
  return *r;
}

struct AluCase {
  const char* what;
  const char* ptx;  // computes %r10
  uint32_t want;
};

// clang-format off
const AluCase kAlu[] = {
  {"add.s16 wraps at 16 bits", "mov.u16 %rs1, 65535; add.s16 %rs2, %rs1, 2; cvt.u32.u16 %r10, %rs2;", 1},
  {"sub.s16 then zero-extend", "mov.u16 %rs1, 0; sub.s16 %rs2, %rs1, 1; cvt.u32.u16 %r10, %rs2;", 65535},
  {"sub.s16 then sign-extend", "mov.u16 %rs1, 0; sub.s16 %rs2, %rs1, 1; cvt.s32.s16 %r10, %rs2;", 0xffffffffu},
  {"mul.hi.u16: 1000*1000 = 0xF4240", "mov.u16 %rs1, 1000; mul.hi.u16 %rs2, %rs1, %rs1; cvt.u32.u16 %r10, %rs2;", 15},
  {"mul.wide.s32 -3*5 high word", "mov.u32 %r2, -3; mul.wide.s32 %rd5, %r2, 5; shr.u64 %rd6, %rd5, 32; cvt.u32.u64 %r10, %rd6;", 0xffffffffu},
  {"mul.wide.u32 0xFFFFFFFD*5 = 0x4_FFFFFFF1", "mov.u32 %r2, -3; mul.wide.u32 %rd5, %r2, 5; shr.u64 %rd6, %rd5, 32; cvt.u32.u64 %r10, %rd6;", 4},
  {"add.s64 carries into the high word", "mov.u64 %rd5, 4294967295; add.s64 %rd6, %rd5, 1; shr.u64 %rd7, %rd6, 32; cvt.u32.u64 %r10, %rd7;", 1},
  {"mul.lo.s64 (2^32+3)(2^32+5) high", "mov.u64 %rd5, 4294967299; mov.u64 %rd6, 4294967301; mul.lo.s64 %rd7, %rd5, %rd6; shr.u64 %rd8, %rd7, 32; cvt.u32.u64 %r10, %rd8;", 8},
  {"mul.lo.s64 (2^32+3)(2^32+5) low", "mov.u64 %rd5, 4294967299; mov.u64 %rd6, 4294967301; mul.lo.s64 %rd7, %rd5, %rd6; cvt.u32.u64 %r10, %rd7;", 15},
  {"mul.hi.u32 0xFFFFFFFF^2 = 0xFFFFFFFE_00000001", "mov.u32 %r2, -1; mul.hi.u32 %r10, %r2, %r2;", 0xfffffffeu},
  {"mul.hi.s32 -1*-1 = 1: high 0", "mov.u32 %r2, -1; mul.hi.s32 %r10, %r2, %r2;", 0},
  {"mad.lo.s32 3*4+5", "mov.u32 %r2, 3; mad.lo.s32 %r10, %r2, 4, 5;", 17},
  {"mad.wide.u32 0xFFFFFFFF*2+1 high", "mov.u32 %r2, -1; mov.u64 %rd5, 1; mad.wide.u32 %rd6, %r2, 2, %rd5; shr.u64 %rd7, %rd6, 32; cvt.u32.u64 %r10, %rd7;", 1},
  {"shr.s32 by 40 gives the sign", "mov.u32 %r2, -8; shr.s32 %r10, %r2, 40;", 0xffffffffu},
  {"shr.s32 by 1", "mov.u32 %r2, -8; shr.s32 %r10, %r2, 1;", 0xfffffffcu},
  {"shr.u32 by 40 gives 0", "mov.u32 %r2, -8; shr.u32 %r10, %r2, 40;", 0},
  {"shl.b32 by 32 gives 0", "mov.u32 %r2, 1; shl.b32 %r10, %r2, 32;", 0},
  {"shl.b64 by 33 then high word", "mov.u64 %rd5, 1; shl.b64 %rd6, %rd5, 33; shr.u64 %rd7, %rd6, 32; cvt.u32.u64 %r10, %rd7;", 2},
  {"bfe.s32 bits 4..7 of 0xF0, sign bit 7", "mov.u32 %r2, 0xF0; bfe.s32 %r10, %r2, 4, 4;", 0xffffffffu},
  {"bfe.u32 bits 4..7 of 0xF0", "mov.u32 %r2, 0xF0; bfe.u32 %r10, %r2, 4, 4;", 15},
  {"bfe.s32 past bit 31 fills with bit 31", "mov.u32 %r2, -2147483648; bfe.s32 %r10, %r2, 30, 8;", 0xfffffffeu},
  {"bfind.shiftamt.u32 0x10000", "mov.u32 %r2, 65536; bfind.shiftamt.u32 %r10, %r2;", 15},
  {"bfind.u32 of 0", "mov.u32 %r2, 0; bfind.u32 %r10, %r2;", 0xffffffffu},
  {"bfind.s32 of -2: highest bit unlike the sign is bit 0", "mov.u32 %r2, -2; bfind.s32 %r10, %r2;", 0},
  {"bfi.b32 0xabcd into all ones at 8, 16 bits", "mov.u32 %r2, 0xabcd; mov.u32 %r3, -1; bfi.b32 %r10, %r2, %r3, 8, 16;", 0xffabcdffu},
  {"bfi.b32 pos 28 len 32 keeps bits above 31 out", "mov.u32 %r2, 5; mov.u32 %r3, 0; bfi.b32 %r10, %r2, %r3, 28, 32;", 0x50000000u},
  {"bfi.b64 0xffff at 24 crosses the words (high word)", "mov.u64 %rd5, 65535; mov.u64 %rd6, 0; bfi.b64 %rd7, %rd5, %rd6, 24, 16; shr.u64 %rd8, %rd7, 32; cvt.u32.u64 %r10, %rd8;", 0xffu},
  {"prmt 0x0123 reverses a's bytes", "mov.u32 %r2, 0x44332211; mov.u32 %r3, 0x88776655; prmt.b32 %r10, %r2, %r3, 0x0123;", 0x11223344u},
  {"prmt 0x000F replicates byte 7's sign", "mov.u32 %r2, 0x44332211; mov.u32 %r3, 0x88776655; prmt.b32 %r10, %r2, %r3, 0x000F;", 0x111111ffu},
  {"shf.l.wrap (3:0x80000001) << 4", "mov.u32 %r2, -2147483647; mov.u32 %r3, 3; shf.l.wrap.b32 %r10, %r2, %r3, 36;", 0x38u},
  {"shf.r.wrap (3:0x80000001) >> 4", "mov.u32 %r2, -2147483647; mov.u32 %r3, 3; shf.r.wrap.b32 %r10, %r2, %r3, 4;", 0x38000000u},
  {"shf.l.clamp by 40 = by 32: a", "mov.u32 %r2, -2147483647; mov.u32 %r3, 3; shf.l.clamp.b32 %r10, %r2, %r3, 40;", 0x80000001u},
  {"clz.b32 of 1", "mov.u32 %r2, 1; clz.b32 %r10, %r2;", 31},
  {"clz.b32 of 0", "mov.u32 %r2, 0; clz.b32 %r10, %r2;", 32},
  {"clz.b64 of 1", "mov.u64 %rd5, 1; clz.b64 %r10, %rd5;", 63},
  {"popc.b32 0xF0F0", "mov.u32 %r2, 0xF0F0; popc.b32 %r10, %r2;", 8},
  {"brev.b32 1", "mov.u32 %r2, 1; brev.b32 %r10, %r2;", 0x80000000u},
  {"div.s32 -7/2 truncates", "mov.u32 %r2, -7; div.s32 %r10, %r2, 2;", 0xfffffffdu},
  {"rem.s32 -7%2", "mov.u32 %r2, -7; rem.s32 %r10, %r2, 2;", 0xffffffffu},
  {"div.u32 0xFFFFFFF9/2", "mov.u32 %r2, -7; div.u32 %r10, %r2, 2;", 0x7ffffffcu},
  {"min.u32 of -1 and 1", "mov.u32 %r2, -1; min.u32 %r10, %r2, 1;", 1},
  {"min.s32 of -1 and 1", "mov.u32 %r2, -1; min.s32 %r10, %r2, 1;", 0xffffffffu},
  {"max.s32 of -1 and 1", "mov.u32 %r2, -1; max.s32 %r10, %r2, 1;", 1},
  {"setp.lt.u32 -1 < 1 is false", "mov.u32 %r2, -1; setp.lt.u32 %p1, %r2, 1; selp.b32 %r10, 7, 9, %p1;", 9},
  {"setp.lt.s32 -1 < 1 is true", "mov.u32 %r2, -1; setp.lt.s32 %p1, %r2, 1; selp.b32 %r10, 7, 9, %p1;", 7},
  {"setp p|q: q is not p", "mov.u32 %r2, 1; setp.eq.s32 %p1|%p2, %r2, 1; selp.b32 %r10, 7, 9, %p2;", 9},
  {"setp.eq.s64 compares the high word", "mov.u64 %rd5, 4294967296; setp.eq.s64 %p1, %rd5, 0; selp.b32 %r10, 7, 9, %p1;", 9},
  {"xor.pred / not.pred", "mov.pred %p1, 0; not.pred %p2, %p1; xor.pred %p3, %p2, %p1; selp.b32 %r10, 7, 9, %p3;", 7},
  {"cvt.s64.s32 -1 high word", "mov.u32 %r2, -1; cvt.s64.s32 %rd5, %r2; shr.u64 %rd6, %rd5, 32; cvt.u32.u64 %r10, %rd6;", 0xffffffffu},
  {"cvt.u64.u32 -1 high word", "mov.u32 %r2, -1; cvt.u64.u32 %rd5, %r2; shr.u64 %rd6, %rd5, 32; cvt.u32.u64 %r10, %rd6;", 0},
  {"cvt.u16.u32 truncates", "mov.u32 %r2, 70000; cvt.u16.u32 %rs1, %r2; cvt.u32.u16 %r10, %rs1;", 4464},
  {"abs.s32 of INT_MIN", "mov.u32 %r2, -2147483648; abs.s32 %r10, %r2;", 0x80000000u},
  {"neg.s32 5", "mov.u32 %r2, 5; neg.s32 %r10, %r2;", 0xfffffffbu},
  {"not.b32 0", "mov.u32 %r2, 0; not.b32 %r10, %r2;", 0xffffffffu},
  {"and.b64 with a 35-bit immediate keeps the low word", "mov.u64 %rd5, -1; and.b64 %rd6, %rd5, 17179869176; cvt.u32.u64 %r10, %rd6;", 0xfffffff8u},
  {"WARP_SZ is the machine's 4", "mov.u32 %r10, WARP_SZ;", 4},
  {"%ntid.y is 1", "mov.u32 %r10, %ntid.y;", 1},
};
// clang-format on

TEST(PtxEval, IntegerOpsMatchHandWorkedValues) {
  for (const AluCase& c : kAlu) {
    EvalResult r = evalOk(kernel(std::string("\t") + c.ptx + "\n\tst.global.u32 [%rd2], %r10;\n"));
    EXPECT_EQ(r.global[0], c.want) << c.what << ": " << c.ptx;
    EXPECT_EQ(r.unspecified, 0u) << c.what;
  }
}

// A checker that cannot fail proves nothing: a wrong expectation must be reported.
TEST(PtxEval, IntegerOpsTableFailingTwin) {
  EvalResult r = evalOk(kernel("\tmov.u32 %r2, -8; shr.s32 %r10, %r2, 1;\n\tst.global.u32 [%rd2], %r10;\n"));
  EXPECT_NE(r.global[0], 0x7ffffffcu);  // the logical shift's value is not the arithmetic one
}

TEST(PtxEval, DivisionByZeroIsCountedAsUnspecified) {
  EvalResult r = evalOk(kernel("\tmov.u32 %r2, 0;\n\tdiv.u32 %r10, 7, %r2;\n\tst.global.u32 [%rd2], %r10;\n"));
  EXPECT_EQ(r.global[0], 0xffffffffu);  // the machine's documented value for div.u by 0
  EXPECT_EQ(r.unspecified, 1u);
  EXPECT_NE(r.firstUnspecified.find("division by zero"), std::string::npos) << r.firstUnspecified;
  EvalResult m = evalOk(kernel("\tmov.u32 %r2, -2147483648;\n\tdiv.s32 %r10, %r2, -1;\n\tst.global.u32 [%rd2], %r10;\n"));
  EXPECT_EQ(m.global[0], 0x80000000u);
  EXPECT_EQ(m.unspecified, 1u);
}

TEST(PtxEval, SubWordLoadsAreLittleEndianAndExtendByType) {
  std::array<uint32_t, kGlobalWords> g{};
  g[1] = 0x88332211u;
  EvalResult r = evalOk(kernel("\tld.global.u8 %r10, [%rd2+6];\n\tst.global.u32 [%rd2], %r10;\n"
                               "\tld.global.s8 %r11, [%rd2+7];\n\tst.global.u32 [%rd2+8], %r11;\n"
                               "\tld.global.u16 %r12, [%rd2+4];\n\tst.global.u32 [%rd2+12], %r12;\n"),
                        1, 0, g);
  EXPECT_EQ(r.global[0], 0x33u);
  EXPECT_EQ(r.global[2], 0xffffff88u);
  EXPECT_EQ(r.global[3], 0x2211u);
}

TEST(PtxEval, OutOfRangeStoreFaultsNamingAddressAndKeepsEarlierStores) {
  // out = byte 496 (word 124): thread 0 writes word 124, thread 1 word 125, thread 2 byte 504.
  auto r = evalText(kernel("\tst.global.u32 [%rd4], 7;\n"), 3, 496);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->status, EvalStatus::Fault);
  EXPECT_EQ(r->fault.kind, ErrorKind::MachineFault);
  EXPECT_NE(r->fault.message.find("address 504 is out of range"), std::string::npos) << r->fault.message;
  EXPECT_NE(r->fault.message.find("thread 2"), std::string::npos) << r->fault.message;
  EXPECT_EQ(r->global[124], 7u);
  EXPECT_EQ(r->global[125], 7u);
}

TEST(PtxEval, NegativeIndexWrapsModulo2To64AndFaults) {
  // out = 0, index -1: the exact 64-bit address is 2^64 - 4, outside memory.
  auto r = evalText(kernel("\tadd.s64 %rd5, %rd2, -4;\n\tst.global.u32 [%rd5], 1;\n"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, EvalStatus::Fault);
  EXPECT_NE(r->fault.message.find("18446744073709551612"), std::string::npos) << r->fault.message;
}

TEST(PtxEval, MisalignedAccessFaults) {
  auto r = evalText(kernel("\tst.global.u32 [%rd2+2], 1;\n"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, EvalStatus::Fault);
  EXPECT_NE(r->fault.message.find("not aligned"), std::string::npos) << r->fault.message;
}

TEST(PtxEval, ThreadsFollowTheirOwnControlFlow) {
  // out[t] = 0 + 1 + ... + t (a loop with a per-thread trip count): 0 1 3 6 10 15.
  EvalResult r = evalOk(kernel("\tmov.u32 %r2, 0;\n\tmov.u32 %r3, 0;\n"
                               "$L__loop:\n\tsetp.gt.u32 %p1, %r3, %r1;\n\t@%p1 bra $L__done;\n"
                               "\tadd.s32 %r2, %r2, %r3;\n\tadd.s32 %r3, %r3, 1;\n\tbra.uni $L__loop;\n"
                               "$L__done:\n\tst.global.u32 [%rd4], %r2;\n"),
                        6);
  const uint32_t want[] = {0, 1, 3, 6, 10, 15};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(r.global[t], want[t]) << "thread " << t;
}

TEST(PtxEval, BarrierOrdersSharedMemoryAcrossWarps) {
  // s[t] = t + 1; bar.sync; out[t] = s[(t + 5) % 8]  => out = 6 7 8 1 2 3 4 5 (8 threads, 2 warps).
  EvalResult r = evalOk(kernel("\tmov.u32 %r2, sh;\n\tshl.b32 %r3, %r1, 2;\n\tadd.s32 %r4, %r2, %r3;\n"
                               "\tadd.s32 %r5, %r1, 1;\n\tst.shared.u32 [%r4], %r5;\n\tbar.sync 0;\n"
                               "\tadd.s32 %r6, %r1, 5;\n\tand.b32 %r6, %r6, 7;\n\tshl.b32 %r6, %r6, 2;\n"
                               "\tadd.s32 %r7, %r2, %r6;\n\tld.shared.u32 %r8, [%r7];\n\tst.global.u32 [%rd4], %r8;\n",
                               "\t.shared .align 4 .b8 sh[32];\n"),
                        8);
  const uint32_t want[] = {6, 7, 8, 1, 2, 3, 4, 5};
  for (int t = 0; t < 8; ++t) EXPECT_EQ(r.global[t], want[t]) << "thread " << t;
}

// corpus/bugs/cvta-shared-generic: clang turns `v = cond ? in[i] : sb[j]` in a loop into one
// generic pointer that is `cvta.global` of a global address on the first trip and `cvta.shared`
// of a shared one on later trips, then loads through it with a generic `ld`. The shared window
// sits at kSharedGenericBase in the generic space (eval.h).
const char* kSharedDecl = "\t.shared .align 4 .b8 sh[32];\n";
// sh[t] = t + 1; bar.sync; %rd6 = cvta.shared(&sh[(t + 5) % 8]) (8 threads, 2 warps).
const char* kSharedThenGeneric =
    "\tmov.u64 %rd5, sh;\n\tmul.wide.u32 %rd8, %r1, 4;\n\tadd.s64 %rd9, %rd5, %rd8;\n"
    "\tadd.s32 %r5, %r1, 1;\n\tst.shared.u32 [%rd9], %r5;\n\tbar.sync 0;\n"
    "\tadd.s32 %r6, %r1, 5;\n\tand.b32 %r6, %r6, 7;\n\tmul.wide.u32 %rd10, %r6, 4;\n"
    "\tadd.s64 %rd11, %rd5, %rd10;\n\tcvta.shared.u64 %rd6, %rd11;\n";

TEST(PtxEval, GenericLoadThroughCvtaSharedReadsSharedMemory) {
  // out[t] = generic ld of sh[(t + 5) % 8] = (t + 5) % 8 + 1 => 6 7 8 1 2 3 4 5. Global words
  // 16.. hold 100 + i, so a load that went to global memory instead would read one of those or
  // fault; none of 6, 7, 8, 1..5 is there.
  std::array<uint32_t, kGlobalWords> g{};
  for (uint32_t i = 16; i < kGlobalWords; ++i) g[i] = 100 + i;
  EvalResult r = evalOk(kernel(std::string(kSharedThenGeneric) + "\tld.u32 %r8, [%rd6];\n\tst.global.u32 [%rd4], %r8;\n",
                               kSharedDecl),
                        8, 0, g);
  const uint32_t want[] = {6, 7, 8, 1, 2, 3, 4, 5};
  for (int t = 0; t < 8; ++t) EXPECT_EQ(r.global[t], want[t]) << "thread " << t;
  EXPECT_EQ(r.unspecified, 0u);
}

TEST(PtxEval, GenericLoadOfAnUnconvertedSharedAddressReadsGlobalMemory) {
  // The failing twin: without cvta.shared, the shared-window address sh + 4·((t + 5) % 8) (sh is at
  // 0) is a generic = global address: thread t reads global word (t + 5) % 8, which holds 50 + that
  // word: 55 56 57 50 51 52 53 54, stored to out[16 + t] so that no store meets a load.
  std::array<uint32_t, kGlobalWords> g{};
  for (uint32_t i = 0; i < 8; ++i) g[i] = 50 + i;
  EvalResult r = evalOk(kernel(std::string(kSharedThenGeneric) +
                                   "\tld.u32 %r8, [%rd11];\n\tst.global.u32 [%rd4+64], %r8;\n",
                               kSharedDecl),
                        8, 0, g);
  const uint32_t want[] = {55, 56, 57, 50, 51, 52, 53, 54};
  for (int t = 0; t < 8; ++t) EXPECT_EQ(r.global[16 + t], want[t]) << "thread " << t;
}

TEST(PtxEval, GenericStoreAndAtomicThroughCvtaSharedWriteSharedMemory) {
  // Every thread: generic atom.add [cvta.shared(&sh[0])], t + 1 (1 + ... + 8 = 36) and generic
  // st [cvta.shared(&sh2[t])], t; bar.sync; out[t] = ld.shared sh2[7 - t] = 7 - t, and thread 0
  // out[8] = ld.shared sh[0] = 36. Global memory sees only these 9 stores.
  const std::string body =
      "\tmov.u64 %rd5, sh;\n\tcvta.shared.u64 %rd6, %rd5;\n\tadd.s32 %r5, %r1, 1;\n"
      "\tatom.add.u32 %r9, [%rd6], %r5;\n"
      "\tmov.u64 %rd7, sh2;\n\tmul.wide.u32 %rd8, %r1, 4;\n\tadd.s64 %rd9, %rd7, %rd8;\n"
      "\tcvta.shared.u64 %rd10, %rd9;\n\tst.u32 [%rd10], %r1;\n\tbar.sync 0;\n"
      "\tmov.u32 %r6, 7;\n\tsub.s32 %r6, %r6, %r1;\n\tmul.wide.u32 %rd11, %r6, 4;\n\tadd.s64 %rd12, %rd7, %rd11;\n"
      "\tld.shared.u32 %r7, [%rd12];\n\tst.global.u32 [%rd4], %r7;\n"
      "\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra DONE;\n\tld.shared.u32 %r8, [sh];\n\tst.global.u32 [%rd2+32], %r8;\n"
      "DONE:\n";
  EvalResult r = evalOk(kernel(body, "\t.shared .align 4 .b8 sh[4];\n\t.shared .align 4 .b8 sh2[32];\n"), 8);
  const uint32_t want[] = {7, 6, 5, 4, 3, 2, 1, 0, 36};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(r.global[i], want[i]) << "word " << i;
  for (uint32_t i = 9; i < kGlobalWords; ++i) EXPECT_EQ(r.global[i], 0u) << "word " << i;
}

TEST(PtxEval, CvtaToSharedUndoesCvtaShared) {
  // cvta.to.shared(cvta.shared(a)) = a: ld.shared through it reads sh[(t + 5) % 8] as above.
  EvalResult r = evalOk(kernel(std::string(kSharedThenGeneric) +
                                   "\tcvta.to.shared.u64 %rd12, %rd6;\n\tld.shared.u32 %r8, [%rd12];\n"
                                   "\tst.global.u32 [%rd4], %r8;\n",
                               kSharedDecl),
                        8);
  const uint32_t want[] = {6, 7, 8, 1, 2, 3, 4, 5};
  for (int t = 0; t < 8; ++t) EXPECT_EQ(r.global[t], want[t]) << "thread " << t;
  EXPECT_EQ(r.unspecified, 0u);
}

TEST(PtxEval, CvtaToSharedOfAGlobalAddressIsUnspecified) {
  // %rd2 is `out` (global address 0), not in the shared window: PTX leaves the result undefined.
  EvalResult r = evalOk(kernel("\tcvta.to.shared.u64 %rd5, %rd2;\n"));
  EXPECT_EQ(r.unspecified, 1u);
  EXPECT_NE(r.firstUnspecified.find("cvta.to.shared"), std::string::npos) << r.firstUnspecified;
}

TEST(PtxEval, GenericAccessPastTheSharedWindowFaultsAsShared) {
  // sh has 32 bytes: the generic address of sh + 32 is in the shared part of the generic space
  // but outside the CTA's window.
  auto r = evalText(kernel("\tmov.u64 %rd5, sh;\n\tcvta.shared.u64 %rd6, %rd5;\n\tld.u32 %r8, [%rd6+32];\n",
                           kSharedDecl));
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->status, EvalStatus::Fault);
  EXPECT_NE(r->fault.message.find("shared load of 4 byte(s) at address 32 is out of range"), std::string::npos)
      << r->fault.str();
}

TEST(PtxEval, BarrierReductionsCountOverTheCta) {
  // p = (t is odd) over 6 threads: popc 3, and false, or true.
  EvalResult r = evalOk(kernel("\tand.b32 %r2, %r1, 1;\n\tsetp.ne.u32 %p1, %r2, 0;\n"
                               "\tbar.red.popc.u32 %r3, 0, %p1;\n\tbar.red.and.pred %p2, 0, %p1;\n"
                               "\tbar.red.or.pred %p3, 0, %p1;\n\tselp.u32 %r4, 1, 0, %p2;\n\tselp.u32 %r5, 1, 0, %p3;\n"
                               "\tshl.b32 %r4, %r4, 4;\n\tshl.b32 %r5, %r5, 8;\n\tor.b32 %r3, %r3, %r4;\n"
                               "\tor.b32 %r3, %r3, %r5;\n\tst.global.u32 [%rd4], %r3;\n"),
                        6);
  for (int t = 0; t < 6; ++t) EXPECT_EQ(r.global[t], 0x103u) << "thread " << t;
}

TEST(PtxEval, BarrierReductionAfterAnExitIsUnspecified) {
  // Thread 3 exits; threads 0..2 reduce p = true with .and: over the live threads it is true.
  EvalResult r = evalOk(kernel("\tsetp.eq.u32 %p1, %r1, 3;\n\t@%p1 bra $L__end;\n"
                               "\tsetp.lt.u32 %p2, %r1, 3;\n\tbar.red.and.pred %p3, 0, %p2;\n"
                               "\tselp.u32 %r2, 1, 0, %p3;\n\tst.global.u32 [%rd4], %r2;\n$L__end:\n"),
                        4);
  EXPECT_EQ(r.global[0], 1u);
  EXPECT_EQ(r.global[3], 0u);
  EXPECT_GE(r.unspecified, 1u);
  EXPECT_NE(r.firstUnspecified.find("exited"), std::string::npos) << r.firstUnspecified;
}

TEST(PtxEval, ShuffleDownWidth4AndBallot) {
  // v = 10 * t; shfl.down by 1 with c = 0x1c1f: lanes 0..2 read lane + 1, lane 3 itself;
  // the second warp (threads 4, 5) has two lanes: thread 5 reads itself.
  // ballot of (v >= 20) in warp 0 = lanes 2, 3 = 0b1100; in warp 1 (40, 50) = 0b11.
  EvalResult r = evalOk(kernel("\tmul.lo.s32 %r2, %r1, 10;\n\tshfl.sync.down.b32 %r3|%p2, %r2, 1, 7199, -1;\n"
                               "\tsetp.ge.s32 %p1, %r2, 20;\n\tvote.sync.ballot.b32 %r4, %p1, -1;\n"
                               "\tshl.b32 %r4, %r4, 16;\n\tor.b32 %r3, %r3, %r4;\n\tst.global.u32 [%rd4], %r3;\n"),
                        6);
  const uint32_t want[] = {10 | (12u << 16), 20 | (12u << 16), 30 | (12u << 16), 30 | (12u << 16),
                           50 | (3u << 16), 50 | (3u << 16)};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(r.global[t], want[t]) << "thread " << t;
}

TEST(PtxEval, AtomicsSerialiseInLaneOrder) {
  // 4 threads: atom.exch out[0] with t + 1 returns the previous lane's value (lane 0 reads the
  // initial 100); the last writer is lane 3. out[1 + t] = the returned value.
  std::array<uint32_t, kGlobalWords> g{};
  g[0] = 100;
  EvalResult r = evalOk(kernel("\tadd.s32 %r2, %r1, 1;\n\tatom.global.exch.b32 %r3, [%rd2], %r2;\n"
                               "\tst.global.u32 [%rd4+4], %r3;\n"),
                        4, 0, g);
  EXPECT_EQ(r.global[0], 4u);
  const uint32_t want[] = {100, 1, 2, 3};
  for (int t = 0; t < 4; ++t) EXPECT_EQ(r.global[1 + t], want[t]) << "thread " << t;
}

TEST(PtxEval, AtomIncDecWrapAtTheirBound) {
  // inc with bound 2 from 2 -> 0; dec with bound 5 from 0 -> 5.
  std::array<uint32_t, kGlobalWords> g{};
  g[0] = 2;
  g[1] = 0;
  EvalResult r = evalOk(kernel("\tatom.global.inc.u32 %r2, [%rd2], 2;\n\tatom.global.dec.u32 %r3, [%rd2+4], 5;\n"),
                        1, 0, g);
  EXPECT_EQ(r.global[0], 0u);
  EXPECT_EQ(r.global[1], 5u);
}

TEST(PtxEval, CallsPassParametersAndResults) {
  std::string text =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".func (.param .b32 func_retval0) f(\n\t.param .b32 f_param_0\n)\n{\n\t.reg .b32 %r<3>;\n"
      "\tld.param.u32 %r1, [f_param_0];\n\tmad.lo.s32 %r2, %r1, %r1, 3;\n"
      "\tst.param.b32 [func_retval0+0], %r2;\n\tret;\n}\n"
      ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n"
      "\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r1, 5;\n"
      "\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r1;\n\t.param .b32 retval0;\n"
      "\tcall.uni (retval0), f, (param0);\n\tld.param.b32 %r2, [retval0+0];\n\t}\n"
      "\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n";
  EvalResult r = evalOk(text);
  EXPECT_EQ(r.global[0], 28u);  // 5 * 5 + 3
}

// A .func's .local frame sits after its caller's (eval.h); a recursive function with one has no
// bounded window: refused, naming it. Without .local, recursion runs (within kMaxCallDepth).
TEST(PtxEval, RecursionThroughALocalFrameIsRefused) {
  auto text = [](const std::string& decl) {
    return ".version 9.0\n.target sm_75\n.address_size 64\n"
           ".func f(\n\t.param .b32 f_param_0\n)\n{\n" +
           decl +
           "\t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n"
           "\tld.param.u32 %r1, [f_param_0];\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L__done;\n"
           "\tsub.s32 %r2, %r1, 1;\n\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r2;\n"
           "\tcall.uni f, (param0);\n\t}\n$L__done:\n\tret;\n}\n"
           ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
           "\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], 3;\n\tcall.uni f, "
           "(param0);\n\t}\n"
           "\tret;\n}\n";
  };
  auto refused = evalText(text("\t.local .align 4 .b8 __local_depot0[8];\n"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(refused.error().message.find("recursion through 'f', which has .local variables"),
            std::string::npos)
      << refused.error().message;
  auto runs = evalText(text(""));
  ASSERT_TRUE(runs.ok()) << runs.error().str();
  EXPECT_EQ(runs->status, EvalStatus::Finished);
}

TEST(PtxEval, StepLimitEndsAnEndlessLoop) {
  auto r = evalText(kernel("$L__spin:\n\tbra.uni $L__spin;\n"), 1, 0, {}, 1000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, EvalStatus::StepLimit);
  EXPECT_EQ(r->fault.kind, ErrorKind::StepLimit);
}

TEST(PtxEval, RefusesDivergentWarpOps) {
  // Lanes 0, 1 shuffle at one instruction, lanes 2, 3 at another.
  auto r = evalText(kernel("\tsetp.lt.u32 %p1, %r1, 2;\n\t@%p1 bra $L__a;\n"
                           "\tshfl.sync.idx.b32 %r2, %r1, 0, 7199, -1;\n\tbra.uni $L__end;\n"
                           "$L__a:\n\tshfl.sync.idx.b32 %r2, %r1, 1, 7199, -1;\n$L__end:\n"
                           "\tst.global.u32 [%rd4], %r2;\n"),
                    4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(r.error().message.find("different warp operations"), std::string::npos) << r.error().message;
}

TEST(PtxEval, AWarpOpOfTheLanesLeftIsFine) {
  // Lanes 2, 3 exit; lanes 0, 1 shuffle idx 1 among themselves: both read lane 1's value 1.
  EvalResult r = evalOk(kernel("\tsetp.ge.u32 %p1, %r1, 2;\n\t@%p1 bra $L__end;\n"
                               "\tshfl.sync.idx.b32 %r2, %r1, 1, 7199, 3;\n\tst.global.u32 [%rd4], %r2;\n"
                               "$L__end:\n"),
                        4);
  EXPECT_EQ(r.global[0], 1u);
  EXPECT_EQ(r.global[1], 1u);
}

TEST(PtxEval, LocalMemoryIsPerThreadAndReachableGenerically) {
  // Each thread writes 10t + 1 to d[1] (st.local through %SPL+4) and reads it back generically
  // through cvta.local, plus byte 1 of d[1] (0 for 10t + 1 < 256); 3 threads: out[t] = 1, 11, 21.
  const std::string decls = "\t.local .align 4 .b8 __local_depot0[8];\n\t.reg .b64 %SPL;\n";
  const std::string body =
      "\tmov.u64 %SPL, __local_depot0;\n\tmul.lo.s32 %r2, %r1, 10;\n\tadd.s32 %r2, %r2, 1;\n"
      "\tst.local.u32 [%SPL+4], %r2;\n\tcvta.local.u64 %rd5, %SPL;\n\tld.u32 %r3, [%rd5+4];\n"
      "\tld.local.u8 %r4, [__local_depot0+5];\n\tadd.s32 %r3, %r3, %r4;\n\tst.global.u32 [%rd4], %r3;\n";
  auto r = evalOk(kernel(body, decls), 3);
  EXPECT_EQ(r.global[0], 1u);
  EXPECT_EQ(r.global[1], 11u);
  EXPECT_EQ(r.global[2], 21u);
}

TEST(PtxEval, LocalAccessPastTheFrameFaults) {
  // An 8-byte frame: ld.local [%SPL+8] is out of range; [%SPL+4] is its twin that runs.
  const std::string decls = "\t.local .align 4 .b8 __local_depot0[8];\n\t.reg .b64 %SPL;\n";
  for (const int off : {8, 4}) {
    auto r = evalText(kernel("\tmov.u64 %SPL, __local_depot0;\n\tld.local.u32 %r2, [%SPL+" +
                                 std::to_string(off) + "];\n\tst.global.u32 [%rd4], %r2;\n",
                             decls));
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->status, off == 8 ? EvalStatus::Fault : EvalStatus::Finished) << off;
    if (off == 8) {
      EXPECT_NE(r->fault.message.find("local"), std::string::npos) << r->fault.str();
    }
  }
}

TEST(PtxEval, RefusesWhatHasNoMeaningHere) {
  struct Case {
    const char* what;
    const char* body;
  } cases[] = {
      {"guarded barrier", "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bar.sync 0;\n"},
      {"named barrier", "\tbar.sync 1;\n"},
      {"clock", "\tmov.u32 %r2, %clock;\n"},
      {"activemask", "\tactivemask.b32 %r2;\n"},
      {"cvta.const", "\tcvta.const.u64 %rd5, %rd1;\n"},
  };
  for (const Case& c : cases) {
    auto r = evalText(kernel(c.body), 2);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.error().kind, ErrorKind::PtxUnsupported) << c.what << ": " << r.error().str();
  }
}

TEST(PtxEval, RefusesALaunchThatDoesNotFit) {
  auto m = ptx::parse(kernel(""), "t.ptx");
  ASSERT_TRUE(m.ok());
  Launch l;
  l.params = {};  // k takes one
  auto r = evaluate(*m, l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  l.params = {0};
  l.blockX = 17;
  auto r2 = evaluate(*m, l);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::ptxeval
