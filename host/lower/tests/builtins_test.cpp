// qgpu/host/lower/tests/builtins_test.cpp — the instructions behind CUDA's remaining integer
// builtins, lowered and run in the reference interpreter: mul24.lo, sad, activemask,
// %lanemask_*, vote.uni, membar/fence (no-ops), ld/st.volatile, predicate logic with a constant;
// and the 32-lane findings of LowerStats::assumes32Lanes. Hand-written PTX; expected words worked
// out by hand (label cpu).
#include <gtest/gtest.h>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

// One kernel `k(.param .u64 out)`; `body` computes %r1 per thread, which is stored to out[tid].
std::string kernel(const std::string& body) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(.param .u64 out)\n{\n"
         ".reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n"
         "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\n"
         "mov.u32 %r7, %tid.x;\nmul.wide.u32 %rd2, %r7, 4;\nadd.s64 %rd3, %rd1, %rd2;\n" +
         body + "st.global.u32 [%rd3], %r1;\nret;\n}\n";
}

Expected<std::vector<uint32_t>> run(const std::string& body, uint32_t threads, LowerStats* stats = nullptr) {
  QGPU_TRY(module, ptx::parse(kernel(body), "t.ptx"));
  LowerOptions options;
  options.params = {0};
  QGPU_TRY(program, lower(module, options, stats));
  machine::Launch launch;
  launch.blockX = threads;
  QGPU_TRY(result, oracle::run(program, launch, oracle::RunOptions{100000, false}));
  if (result.status != oracle::RunStatus::Finished) return result.fault;
  return std::vector<uint32_t>(result.global.begin(), result.global.begin() + threads);
}

void expectRun(const std::string& body, uint32_t threads, const std::vector<uint32_t>& want) {
  auto got = run(body, threads);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, want) << body;
}

TEST(LowerBuiltins, Mul24UsesTheLow24BitsOfEachInput) {
  // 0x01000003 has low 24 bits 3; tid + 0x00fffffe: low 24 bits 0xfffffe + tid (mod 2^24).
  expectRun("add.s32 %r2, %r7, 16777214;\nmul24.lo.u32 %r1, %r2, 16777219;\n", 4,
            {0x2fffffa, 0x2fffffd, 0, 3});
  // Signed: 0x00fffffe is -2 in 24 bits; (tid - 1) * -2 with tid - 1 = -1, 0, 1, 2.
  expectRun("sub.s32 %r2, %r7, 1;\nmul24.lo.s32 %r1, %r2, 16777214;\n", 4,
            {2, 0, 0xfffffffe, 0xfffffffc});
}

TEST(LowerBuiltins, SadAddsTheAbsoluteDifferenceInTheTypesOrder) {
  // |tid - 2| + 100; unsigned 0xffffffff vs 1 is a difference of 0xfffffffe, signed -1 vs 1 of 2.
  expectRun("sad.u32 %r1, %r7, 2, 100;\n", 4, {102, 101, 100, 101});
  expectRun("sub.s32 %r2, 0, %r7;\nsad.s32 %r1, %r2, 1, 100;\n", 4, {101, 102, 103, 104});
  // Unsigned, the same inputs: 0 vs 1 -> 1; 0xffffffff vs 1 -> 0xfffffffe; 0xfffffffe -> 0xfffffffd;
  // 0xfffffffd -> 0xfffffffc; plus 100 modulo 2^32.
  expectRun("sub.s32 %r2, 0, %r7;\nsad.u32 %r1, %r2, 1, 100;\n", 4, {101, 98, 97, 96});
}

TEST(LowerBuiltins, ActivemaskIsTheWarpsActiveLanes) {
  expectRun("activemask.b32 %r1;\n", 4, {0xf, 0xf, 0xf, 0xf});
  expectRun("activemask.b32 %r1;\n", 3, {0x7, 0x7, 0x7});
  // Inside a branch taken by the even lanes only.
  expectRun("and.b32 %r2, %r7, 1;\nmov.u32 %r1, 0;\nsetp.ne.s32 %p1, %r2, 0;\n@%p1 bra L1;\n"
            "activemask.b32 %r1;\nL1:\n", 4, {0x5, 0, 0x5, 0});
}

TEST(LowerBuiltins, LaneMasksComeFromTheLaneId) {
  expectRun("mov.u32 %r1, %lanemask_eq;\n", 4, {1, 2, 4, 8});
  expectRun("mov.u32 %r1, %lanemask_lt;\n", 4, {0, 1, 3, 7});
  expectRun("mov.u32 %r1, %lanemask_le;\n", 4, {1, 3, 7, 15});
  expectRun("mov.u32 %r1, %lanemask_gt;\n", 4, {0xfffffffe, 0xfffffffc, 0xfffffff8, 0xfffffff0});
  expectRun("mov.u32 %r1, %lanemask_ge;\n", 4, {0xffffffff, 0xfffffffe, 0xfffffffc, 0xfffffff8});
}

// clang-14 negates a predicate with `xor.pred %p, %q, -1` (corpus/bugs/xor-pred-imm); a constant
// operand of and/or/xor is 0 (false) or 1 / -1 (true), on either side. %p1 = tid < 2.
TEST(LowerBuiltins, PredicateLogicTakesAConstantOperand) {
  const std::string p1 = "setp.lt.u32 %p1, %r7, 2;\n", out = "selp.u32 %r1, 1, 0, %p2;\n";
  expectRun(p1 + "xor.pred %p2, %p1, -1;\n" + out, 4, {0, 0, 1, 1});
  expectRun(p1 + "xor.pred %p2, 1, %p1;\n" + out, 4, {0, 0, 1, 1});
  expectRun(p1 + "xor.pred %p2, %p1, 0;\n" + out, 4, {1, 1, 0, 0});
  expectRun(p1 + "and.pred %p2, %p1, -1;\n" + out, 4, {1, 1, 0, 0});
  expectRun(p1 + "and.pred %p2, 0, %p1;\n" + out, 4, {0, 0, 0, 0});
  expectRun(p1 + "or.pred %p2, %p1, 1;\n" + out, 4, {1, 1, 1, 1});
  expectRun(p1 + "or.pred %p2, %p1, 0;\n" + out, 4, {1, 1, 0, 0});
  expectRun("xor.pred %p2, 1, -1;\n" + out, 2, {0, 0});  // both constant: folded
  auto two = run(p1 + "xor.pred %p2, %p1, 2;\n" + out, 4);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().kind, ErrorKind::PtxUnsupported) << two.error().str();
  EXPECT_NE(two.error().message.find("predicate constant"), std::string::npos) << two.error().str();
}

TEST(LowerBuiltins, VoteUniIsTrueWhenAllActiveLanesAgree) {
  const char* uni = "vote.sync.uni.pred %p2, %p1, 15;\nselp.u32 %r1, 1, 0, %p2;\n";
  expectRun(std::string("setp.lt.u32 %p1, %r7, 9;\n") + uni, 4, {1, 1, 1, 1});  // all true
  expectRun(std::string("setp.gt.u32 %p1, %r7, 9;\n") + uni, 4, {1, 1, 1, 1});  // all false
  expectRun(std::string("setp.lt.u32 %p1, %r7, 2;\n") + uni, 4, {0, 0, 0, 0});  // mixed
}

TEST(LowerBuiltins, FencesAndVolatileAccessesArePlain) {
  expectRun("membar.gl;\nmembar.cta;\nmembar.sys;\nfence.sc.gpu;\nfence.acq_rel.cta;\n"
            "st.volatile.global.u32 [%rd3], 9;\nld.volatile.global.u32 %r1, [%rd3];\nadd.s32 %r1, %r1, %r7;\n",
            4, {9, 10, 11, 12});
}

TEST(LowerBuiltins, RefusesMul24Hi) {
  auto got = run("mul24.hi.u32 %r1, %r7, 3;\n", 4);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(got.error().message.find("mul24.hi"), std::string::npos) << got.error().str();
  EXPECT_EQ(got.error().loc.line, 14u);  // the body's first line
}

TEST(LowerWarpLanes, FourLaneCodeHasNoFindings) {
  LowerStats stats;
  auto got = run("shfl.sync.down.b32 %r1, %r7, 1, 7199, 15;\nvote.sync.ballot.b32 %r2, %p1, 15;\n"
                 "bar.warp.sync 15;\n", 4, &stats);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_TRUE(stats.assumes32Lanes.empty()) << stats.assumes32Lanes.front();
}

TEST(LowerWarpLanes, FlagsWideShufflesAndFullMasks) {
  LowerStats stats;
  // c = 31 (width 32) with a full mask; a ballot and a warp barrier over 32 lanes.
  auto got = run("shfl.sync.down.b32 %r1, %r7, 1, 31, -1;\nvote.sync.ballot.b32 %r2, %p1, -1;\n"
                 "bar.warp.sync -1;\n", 4, &stats);
  ASSERT_TRUE(got.ok()) << got.error().str();
  ASSERT_EQ(stats.assumes32Lanes.size(), 4u);
  EXPECT_NE(stats.assumes32Lanes[0].find("line 14: `shfl.sync.down.b32"), std::string::npos) << stats.assumes32Lanes[0];
  EXPECT_NE(stats.assumes32Lanes[0].find("shuffle segment width 32"), std::string::npos);
  EXPECT_NE(stats.assumes32Lanes[1].find("member mask 0xffffffff names lanes above 3"), std::string::npos);
  EXPECT_NE(stats.assumes32Lanes[2].find("vote.sync.ballot"), std::string::npos);
  EXPECT_NE(stats.assumes32Lanes[3].find("bar.warp.sync"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::lower
