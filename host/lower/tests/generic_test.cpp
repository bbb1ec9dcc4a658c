// qgpu/host/lower/tests/generic_test.cpp — generic pointers into shared memory (docs/lowering.md,
// "Generic addresses"): cvta.shared / cvta.to.shared and generic ld/st/atom through them, static
// (one space by provenance) and dynamic (a pointer that is global in some threads and shared in
// others: both copies, each under the window test). Hand-written PTX run by the interpreter after
// lowering AND by the PTX evaluator, both against hand-worked words (label cpu).
//
// Global memory starts as 1000 + i in word i, so a shared access lowered as a global one (or the
// reverse) reads and writes different words and changes the result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/lower/tests/both_oracles.h"

namespace qgpu::lower {
namespace {

using both::bufKernel;
using both::expectBothWords;
using both::Memory;
using both::outputs;
using both::runBoth;

Memory initial() {
  Memory m{};
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint32_t>(1000 + i);
  return m;
}

// Memory ops of the lowered program in `space`.
int memOps(const machine::Program& p, machine::Space space) {
  int n = 0;
  for (const auto& b : p.blocks)
    for (const auto& op : b.ops)
      if (machine::opInfo(op.op).cls == machine::OpClass::Mem && op.space == space) ++n;
  return n;
}

// sb (4 words) and, for thread t: %rd4 = 4t, %rd6 = sb + 4t (a shared address), sb[t] = 100 + t
// written by st.shared, then a barrier.
const char* kSharedSetup =
    ".shared .align 4 .b8 sb[16];\n"
    "mov.u64 %rd2, sb;\n"
    "mul.wide.u32 %rd4, %r7, 4;\n"
    "add.s64 %rd6, %rd2, %rd4;\n"
    "add.s32 %r1, %r7, 100;\n"
    "st.shared.u32 [%rd6], %r1;\n"
    "bar.sync 0;\n";

TEST(LowerGeneric, LoadStoreAtomThroughCvtaSharedGoToSharedMemory) {
  // %rd5 = cvta.shared(sb + 4t): generic st sb[t] = t + 10, generic atom.add of t on sb[1] (lanes
  // in order 0..3: sb[1] = 11 -> 11, 12, 14, 17; old values 11, 11, 12, 14), barrier, generic
  // ld of sb[t] = 10, 17, 12, 13.
  const std::string body = std::string(kSharedSetup) +
                           "cvta.shared.u64 %rd3, %rd2;\n"
                           "add.s64 %rd5, %rd3, %rd4;\n"
                           "add.s32 %r2, %r7, 10;\n"
                           "st.u32 [%rd5], %r2;\n"
                           "atom.add.u32 %r3, [%rd3+4], %r7;\n"
                           "bar.sync 0;\n"
                           "ld.u32 %r4, [%rd5];\n" +
                           outputs({{8, 4}, {12, 3}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007,  // global words untouched
                      10, 17, 12, 13,                                  // the generic loads
                      11, 11, 12, 14});                                // the atom's old values
  // Static: the only global ops are the kernel's own st.global outputs (2).
  if (r.ok()) {
    EXPECT_EQ(memOps(r->program, machine::Space::Global), 2) << machine::print(r->program);
  }
}

TEST(LowerGeneric, StaticGenericAccessesCostNoMoreThanExplicitSharedOnes) {
  // The same kernel with st/atom/ld.shared on the unconverted addresses: a shared-window pointer
  // below 2^31 + 2^30 (window bound 10 here) needs no 64-bit address check (windowExactAddresses),
  // and the -2^31 folds into the offset, so both lower to the same number of ops.
  auto count = [](const std::string& body) {
    auto module = ptx::parse(bufKernel("", body), "t.ptx");
    EXPECT_TRUE(module.ok()) << module.error().str();
    if (!module.ok()) return -1;
    LowerOptions options;
    options.params = {0};
    auto p = lower(*module, options);
    EXPECT_TRUE(p.ok()) << p.error().str();
    if (!p.ok()) return -1;
    int n = 0;
    for (const auto& b : p->blocks) n += static_cast<int>(b.ops.size());
    return n;
  };
  const std::string generic = std::string(kSharedSetup) +
                              "cvta.shared.u64 %rd3, %rd2;\nadd.s64 %rd5, %rd3, %rd4;\n"
                              "st.u32 [%rd5], %r7;\natom.add.u32 %r3, [%rd3+4], %r7;\nld.u32 %r4, [%rd5];\n" +
                              outputs({{8, 4}, {12, 3}});
  const std::string shared = std::string(kSharedSetup) +
                             "mov.u64 %rd3, %rd2;\nadd.s64 %rd5, %rd3, %rd4;\n"
                             "st.shared.u32 [%rd5], %r7;\natom.shared.add.u32 %r3, [%rd3+4], %r7;\n"
                             "ld.shared.u32 %r4, [%rd5];\n" +
                             outputs({{8, 4}, {12, 3}});
  EXPECT_EQ(count(generic), count(shared));
}

TEST(LowerGeneric, WindowPointerWithANonZeroHighWordFaults) {
  // cvta.shared(sb) + 2^32 + 4t: the low word is sb[t]'s generic address, the high word 1. Its
  // window bound is 34 (> 30), so the 64-bit check stays and the access faults, as in ptxeval
  // (outside the window: a global address above memory). The twin without 2^32 reads sb[t].
  for (const bool high : {true, false}) {
    const std::string body = std::string(kSharedSetup) + "cvta.shared.u64 %rd3, %rd2;\n" +
                             (high ? "add.s64 %rd3, %rd3, 4294967296;\n" : "") +
                             "add.s64 %rd5, %rd3, %rd4;\nld.u32 %r3, [%rd5];\n" + outputs({{8, 3}});
    auto r = runBoth(bufKernel("", body), 4, initial(), 1);
    if (high) {
      ASSERT_TRUE(r.ok()) << r.error().str();
      EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << machine::print(r->program);
      EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault);
    } else {
      expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 100, 101, 102, 103});
    }
  }
}

TEST(LowerGeneric, GenericAddressOfSharedIsItsOffsetPlusTheWindowBase) {
  // cvta.shared of sb + 8 is 2^31 + 8 (the window of ptxeval/eval.h kSharedGenericBase); its
  // words go to buf[8] (low) and buf[12] (high), thread 0's only (t = 0 adds 0).
  const std::string body = std::string(kSharedSetup) +
                           "add.s64 %rd7, %rd2, 8;\n"
                           "cvta.shared.u64 %rd8, %rd7;\n"
                           "cvt.u32.u64 %r2, %rd8;\n"
                           "shr.u64 %rd9, %rd8, 32;\n"
                           "cvt.u32.u64 %r3, %rd9;\n"
                           "setp.eq.u32 %p1, %r7, 0;\n"
                           "@%p1 st.global.u32 [%rd1+32], %r2;\n"
                           "@%p1 st.global.u32 [%rd1+48], %r3;\n";
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 0x80000008u, 1009, 1010, 1011, 0});
}

// %rd10 = even t: cvta.shared(&sb[t]), odd t: cvta.global(&buf[t]); one generic pointer (selp).
const char* kMixedPointer =
    "and.b32 %r2, %r7, 1;\n"
    "setp.eq.u32 %p1, %r2, 0;\n"
    "cvta.shared.u64 %rd7, %rd6;\n"
    "add.s64 %rd8, %rd1, %rd4;\n"
    "cvta.global.u64 %rd9, %rd8;\n"
    "selp.b64 %rd10, %rd7, %rd9, %p1;\n";

TEST(LowerGeneric, PointerSharedInSomeThreadsAndGlobalInOthersIsTestedPerLane) {
  // ld, st of the loaded value + 1, atom.add 5, through %rd10: even threads on sb[t] (100 + t),
  // odd ones on buf[t] (1000 + t). Then each thread reads sb[t] back with ld.shared.
  const std::string body = std::string(kSharedSetup) + kMixedPointer +
                           "ld.u32 %r3, [%rd10];\n"
                           "add.s32 %r4, %r3, 1;\n"
                           "st.u32 [%rd10], %r4;\n"
                           "atom.add.u32 %r5, [%rd10], 5;\n"
                           "bar.sync 0;\n"
                           "ld.shared.u32 %r6, [%rd6];\n" +
                           outputs({{8, 3}, {12, 5}, {16, 6}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1007, 1002, 1009,  // odd t: buf[t] = 1000 + t + 1 + 5
                      1004, 1005, 1006, 1007,
                      100, 1001, 102, 1003,    // the loads
                      101, 1002, 103, 1004,    // the atom's old values
                      106, 101, 108, 103});    // sb[t]: even t + 1 + 5, odd t untouched
  if (r.ok()) {
    EXPECT_GT(memOps(r->program, machine::Space::Global), 3) << machine::print(r->program);
  }
}

TEST(LowerGeneric, RawParameterPointerMergedWithASharedOneIsTestedPerLane) {
  // %rd10 holds cvta.shared(&sb[t]), and in odd threads is then redefined as the raw parameter
  // (no cvta: an integer, a global address) + 4t: two definitions, one register. clang's
  // __noinline__ helpers called with &sh[t] and &g[t] give their pointer parameter this shape.
  const std::string body = std::string(kSharedSetup) +
                           "cvta.shared.u64 %rd10, %rd6;\n"
                           "and.b32 %r2, %r7, 1;\n"
                           "setp.eq.u32 %p1, %r2, 0;\n"
                           "@%p1 bra SKIP;\n"
                           "ld.param.u64 %rd12, [buf];\n"
                           "add.s64 %rd10, %rd12, %rd4;\n"
                           "SKIP:\n"
                           "ld.u32 %r3, [%rd10];\n" +
                           outputs({{8, 3}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 100, 1001, 102, 1003});
}

TEST(LowerGeneric, GuardedDynamicAccessActsOnlyWhereItsGuardHolds) {
  // @p (t < 3) ld: t = 3 keeps 7. @!p (t == 1) st of 55: threads 0, 2 (sb), 3 (buf[3]).
  const std::string body = std::string(kSharedSetup) + kMixedPointer +
                           "setp.lt.u32 %p2, %r7, 3;\n"
                           "mov.u32 %r3, 7;\n"
                           "@%p2 ld.u32 %r3, [%rd10];\n"
                           "setp.eq.u32 %p3, %r7, 1;\n"
                           "mov.u32 %r9, 55;\n"
                           "@!%p3 st.u32 [%rd10], %r9;\n"
                           "bar.sync 0;\n"
                           "ld.shared.u32 %r6, [%rd6];\n" +
                           outputs({{8, 3}, {16, 6}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 55, 1004, 1005, 1006, 1007,
                      100, 1001, 102, 7,
                      1012, 1013, 1014, 1015,
                      55, 101, 55, 103});
}

TEST(LowerGeneric, PointerThatTurnsSharedOnTheSecondTripIsTestedPerTrip) {
  // The corpus case's shape (corpus/bugs/cvta-shared-generic): %rd10 = cvta.global(&buf[t]) on
  // trip 0, cvta.shared(&sb[t]) on trips 1 and 2; each trip adds the loaded word to %r8.
  // t: buf[t] + 2 * sb[t] = 1000 + t + 2 (100 + t).
  const std::string body = std::string(kSharedSetup) +
                           "add.s64 %rd8, %rd1, %rd4;\n"
                           "cvta.global.u64 %rd10, %rd8;\n"
                           "mov.u32 %r8, 0;\n"
                           "mov.u32 %r9, 0;\n"
                           "LOOP:\n"
                           "ld.u32 %r3, [%rd10];\n"
                           "add.s32 %r8, %r8, %r3;\n"
                           "cvta.shared.u64 %rd10, %rd6;\n"
                           "add.s32 %r9, %r9, 1;\n"
                           "setp.lt.u32 %p1, %r9, 3;\n"
                           "@%p1 bra LOOP;\n" +
                           outputs({{8, 8}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1200, 1203, 1206, 1209});
}

TEST(LowerGeneric, CvtaToSharedUndoesCvtaShared) {
  // 64-bit and 32-bit forms: cvta.to.shared(cvta.shared(sb + 4t)) is sb + 4t again, used by
  // st.shared; the 32-bit generic pointer, widened by cvt, is also loaded through.
  const std::string body = std::string(kSharedSetup) +
                           "cvta.shared.u64 %rd7, %rd6;\n"
                           "cvta.to.shared.u64 %rd8, %rd7;\n"
                           "add.s32 %r2, %r7, 20;\n"
                           "st.shared.u32 [%rd8], %r2;\n"
                           "cvt.u32.u64 %r10, %rd6;\n"
                           "cvta.shared.u32 %r11, %r10;\n"
                           "cvt.u64.u32 %rd11, %r11;\n"
                           "ld.u32 %r3, [%rd11];\n"
                           "cvta.to.shared.u32 %r12, %r11;\n"
                           "add.s32 %r4, %r7, 40;\n"
                           "st.shared.u32 [%r12+0], %r4;\n"
                           "ld.shared.u32 %r5, [%rd6];\n" +
                           outputs({{8, 3}, {12, 5}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 20, 21, 22, 23, 40, 41, 42, 43});
}

TEST(LowerGeneric, CvtaSharedOfAConstantIsTheConstantPlusTheWindowBase) {
  // sb is at shared byte 0, so `mov.u64 %rd11, 0` is its address as a constant; cvta.shared of it
  // is 2^31, not 0 (the 64-bit add of the constant that follows must use 2^31: its high half is
  // read by the address check, %rd5 not being provably below 2^32).
  const std::string body = std::string(kSharedSetup) +
                           "mov.u64 %rd11, 0;\n"
                           "cvta.shared.u64 %rd12, %rd11;\n"
                           "add.s64 %rd5, %rd4, %rd12;\n"
                           "ld.u32 %r3, [%rd5];\n" +
                           outputs({{8, 3}});
  auto r = runBoth(bufKernel("", body), 4, initial(), 1);
  expectBothWords(r, {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 100, 101, 102, 103});
}

TEST(LowerGeneric, GenericAccessPastTheSharedWindowFaultsInBoth) {
  // Static: cvta.shared(sb) + 400 bytes is shared word 100 of a 4-word window. Dynamic: the mixed
  // pointer moved 2^21 bytes: odd threads' global address is out of range, even threads' is past
  // the window (ptxeval: global, out of range; here: shared, out of range). Both fault.
  for (const std::string& access : {std::string("cvta.shared.u64 %rd11, %rd2;\nld.u32 %r3, [%rd11+400];\n"),
                                   std::string(kMixedPointer) + "add.s64 %rd11, %rd10, 2097152;\nld.u32 %r3, [%rd11];\n"}) {
    auto r = runBoth(bufKernel("", std::string(kSharedSetup) + access + outputs({{8, 3}})), 4, initial(), 1);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << access;
    EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault) << access;
    EXPECT_EQ(r->machine.global[8], 1008u);  // the fault comes before the output store
  }
}

TEST(LowerGeneric, CvtaOfConstIsRefusedWithItsLine) {
  // .const has no generic window here (.local has one since local memory: local_test.cpp).
  auto module = ptx::parse(bufKernel("", "cvta.const.u64 %rd3, %rd1;\n"), "t.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions options;
  options.params = {0};
  auto p = lower(*module, options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::PtxUnsupported) << p.error().str();
  EXPECT_NE(p.error().message.find("cvta.const"), std::string::npos) << p.error().str();
  EXPECT_NE(p.error().message.find(".const space"), std::string::npos) << p.error().str();
  EXPECT_EQ(p.error().loc.line, 13u) << p.error().str();
}

}  // namespace
}  // namespace qgpu::lower
