// qgpu/host/lower/tests/wide_memory_test.cpp — 64-bit loads, stores and atomics (two word
// accesses, the low word at the lower address), lowered and run in the reference interpreter AND
// run by the PTX evaluator (ptxeval, byte-addressed memory: an 8-byte access is one access there),
// each against hand-worked words (label cpu). The CUDA twins are in arith64_cuda_test.cpp and the
// catalog kernel wide_histogram.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "host/lower/tests/both_oracles.h"

namespace qgpu::lower {
namespace {

using both::kWords;
using both::Memory;

// One kernel `k(.param .u64 buf)`: %rd1 = buf, %r7 = tid.x, %rd2 = buf + 8 * tid.x, then `body`.
std::string kernel(const std::string& body) {
  return both::bufKernel("mul.wide.u32 %rd2, %r7, 8;\nadd.s64 %rd2, %rd1, %rd2;\n", body);
}

Expected<both::Both> runBoth(const std::string& body, uint32_t threads, const Memory& initial = {}) {
  return both::runBoth(kernel(body), threads, initial, 1);
}

// Both oracles finish and leave words [0, want.size()) equal to `want`.
void expectWords(const std::string& body, uint32_t threads, const std::vector<uint32_t>& want,
                 const Memory& initial = {}) {
  both::expectBothWords(runBoth(body, threads, initial), want);
}

// Both oracles fault, and memory is `initial` (no word moved).
void expectFaultNothingMoved(const std::string& body, uint32_t threads, const Memory& initial = {}) {
  auto r = runBoth(body, threads, initial);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << machine::print(r->program);
  EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault);
  for (size_t i = 0; i < kWords; ++i) EXPECT_EQ(r->machine.global[i], initial[i]) << "word " << i;
}

TEST(Wide64Memory, LoadAndStoreTheLowWordAtTheLowerAddress) {
  // Element t = words 2t (low), 2t+1 (high); thread t stores element t + 1 at element t + 4.
  // e0 = 0x00000001_ffffffff + 1 = 0x00000002_00000000 (the carry crosses the words);
  // e1 = 0x80000000_00000005 + 1 = 0x80000000_00000006; e2 = 0xffffffff_fffffffe + 1 =
  // 0xffffffff_ffffffff; e3 = 0xffffffff_ffffffff + 1 = 0.
  Memory init{};
  const uint32_t in[] = {0xffffffff, 1, 5, 0x80000000, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff};
  for (size_t i = 0; i < 8; ++i) init[i] = in[i];
  for (const char* type : {"u64", "s64", "b64"})
    expectWords(std::string("ld.global.") + type + " %rd3, [%rd2];\nadd.s64 %rd3, %rd3, 1;\nst.global." + type +
                    " [%rd2+32], %rd3;\n",
                4,
                {0xffffffff, 1, 5, 0x80000000, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff,  //
                 0, 2, 6, 0x80000000, 0xffffffff, 0xffffffff, 0, 0},
                init);
}

TEST(Wide64Memory, LoadIntoItsOwnAddressRegister) {
  // Pointer chasing: element 0 holds 8 (the address of element 1), element 1 holds
  // 0x12345678_aaaa5555; %rd3 = *%rd3 twice, stored at element 4 (words 8, 9).
  Memory init{};
  init[0] = 8;
  init[2] = 0xaaaa5555;
  init[3] = 0x12345678;
  expectWords("mov.u64 %rd3, %rd1;\nld.global.u64 %rd3, [%rd3];\nld.global.u64 %rd3, [%rd3];\n"
              "st.global.u64 [%rd1+32], %rd3;\n",
              1, {8, 0, 0xaaaa5555, 0x12345678, 0, 0, 0, 0, 0xaaaa5555, 0x12345678}, init);
}

TEST(Wide64Memory, StoresAnImmediateAndASharedElement) {
  // 0x1122334455667788 through shared memory (an 8-aligned .b8 array): words 0x55667788, 0x11223344.
  expectWords(".shared .align 8 .b8 s[16];\nmov.u32 %r1, s;\n"
              "st.shared.u64 [%r1+8], 1234605616436508552;\nld.shared.u64 %rd3, [%r1+8];\n"
              "st.global.u64 [%rd1], %rd3;\n",
              1, {0x55667788, 0x11223344});
}

TEST(Wide64Memory, MisalignedAccessesFaultBeforeAnyWordMoves) {
  // A GPU faults on an 8-byte access at a 4-byte-aligned address; the failing twins at +8 run.
  Memory init{};
  init[1] = 7;
  expectFaultNothingMoved("ld.global.u64 %rd3, [%rd1+4];\nst.global.u64 [%rd1+16], %rd3;\n", 1, init);
  expectFaultNothingMoved("st.global.u64 [%rd1+12], %rd1;\n", 1, init);
  // One misaligned lane (lane 1's address buf + 4 * 1) faults the whole store.
  expectFaultNothingMoved("mul.wide.u32 %rd4, %r7, 4;\nadd.s64 %rd4, %rd1, %rd4;\n"
                          "setp.lt.u32 %p1, %r7, 2;\n@%p1 st.global.u64 [%rd4+16], 9;\n",
                          4, init);
  expectWords("ld.global.u64 %rd3, [%rd1];\nst.global.u64 [%rd1+8], %rd3;\n", 1, {0, 7, 0, 7}, init);
  // The last word of global memory: an aligned element in range has its high word in range.
  expectWords("st.global.u64 [%rd1+496], 12884901889;\nld.global.u64 %rd3, [%rd1+496];\n"
              "st.global.u64 [%rd1], %rd3;\n",
              1, {1, 3});
  expectFaultNothingMoved("st.global.u64 [%rd1+504], 1;\n", 1);
}

TEST(Wide64Memory, SharedStoreWhoseHighWordIsOutsideFaultsFirst) {
  // .shared of 12 bytes: 3 words, odd; element 1 (bytes 8..15) has its low word inside shared
  // memory and its high word outside: the store faults before the low word is written (the lowering
  // probes the high word first), so nothing reaches global memory either.
  auto r = runBoth(".shared .align 8 .b8 s[12];\nmov.u32 %r1, s;\nst.shared.u32 [%r1+8], 5;\n"
                   "st.shared.u64 [%r1+8], 1;\nld.shared.u32 %r2, [%r1+8];\nst.global.u32 [%rd1], %r2;\n",
                   1);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << machine::print(r->program);
  // The op that faults is the probe, a load: no store of the pair ran (a store faulting would say
  // "shared store").
  EXPECT_NE(r->machine.fault.message.find("shared load at byte address 12"), std::string::npos) << r->machine.fault.str();
  EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault);
  EXPECT_EQ(r->machine.global[0], 0u);
  // The twin: with 16 bytes of shared memory (4 words, even) the same store runs, no probe.
  expectWords(".shared .align 8 .b8 s[16];\nmov.u32 %r1, s;\nst.shared.u64 [%r1+8], 1;\n"
              "ld.shared.u32 %r2, [%r1+8];\nst.global.u32 [%rd1], %r2;\n",
              1, {1});
}

TEST(Wide64Memory, V2U64SplitsIntoTwoElementsAndChecks16ByteAlignment) {
  // ld.v2.u64 of elements 0, 1 stored swapped as elements 2, 3; at buf + 8 (8- but not
  // 16-aligned) the vector load faults.
  Memory init{};
  const uint32_t in[] = {1, 2, 3, 4};
  for (size_t i = 0; i < 4; ++i) init[i] = in[i];
  expectWords("ld.global.v2.u64 {%rd3, %rd4}, [%rd1];\nst.global.v2.u64 [%rd1+16], {%rd4, %rd3};\n", 1,
              {1, 2, 3, 4, 3, 4, 1, 2}, init);
  expectFaultNothingMoved("ld.global.v2.u64 {%rd3, %rd4}, [%rd1+8];\nst.global.v2.u64 [%rd1+32], {%rd4, %rd3};\n", 1,
                          init);
}

TEST(Wide64Atomics, AddCarriesIntoTheHighWordLaneByLane) {
  // M (words 0, 1) = 0x00000007_fffffffe; lane t adds b_t (words 2 + 2t, 3 + 2t) and stores its old
  // value at words 10 + 2t, 11 + 2t. In lane order:
  //   lane 0 b = 0x00000000_00000001: old 0x00000007_fffffffe, M = 0x00000007_ffffffff
  //   lane 1 b = 0x00000001_00000001: old 0x00000007_ffffffff, M = 0x00000009_00000000 (carry)
  //   lane 2 b = 0x00000000_ffffffff: old 0x00000009_00000000, M = 0x00000009_ffffffff
  //   lane 3 b = 0xffffffff_ffffffff: old 0x00000009_ffffffff, M = 0x00000009_fffffffe (carry)
  Memory init{};
  const uint32_t in[] = {0xfffffffe, 7, 1, 0, 1, 1, 0xffffffff, 0, 0xffffffff, 0xffffffff};
  for (size_t i = 0; i < 10; ++i) init[i] = in[i];
  expectWords("ld.global.u64 %rd4, [%rd2+8];\natom.global.add.u64 %rd5, [%rd1], %rd4;\n"
              "st.global.u64 [%rd2+40], %rd5;\n",
              4,
              {0xfffffffe, 9, 1, 0, 1, 1, 0xffffffff, 0, 0xffffffff, 0xffffffff,  //
               0xfffffffe, 7, 0xffffffff, 7, 0, 9, 0xffffffff, 9},
              init);
}

TEST(Wide64Atomics, AddAcrossWarpsAndGuardedLanes) {
  // 8 threads (2 warps) add 0x80000000 each to M = 0 (words 0, 1): thread t's old value is
  // t * 0x80000000 (stored at words 2 + 2t, 3 + 2t), M ends 0x00000004_00000000. Then threads 0..3
  // add 1 to element 10 (words 20, 21) only where t is odd: 2.
  expectWords("atom.global.add.u64 %rd5, [%rd1], 2147483648;\nst.global.u64 [%rd2+8], %rd5;\n"
              "and.b32 %r1, %r7, 1;\nsetp.eq.u32 %p1, %r1, 1;\nsetp.lt.u32 %p2, %r7, 4;\nand.pred %p1, %p1, %p2;\n"
              "@%p1 atom.global.add.u64 %rd6, [%rd1+80], 1;\n",
              8,
              {0, 4, 0, 0, 0x80000000, 0, 0, 1, 0x80000000, 1, 0, 2, 0x80000000, 2, 0, 3, 0x80000000, 3,  //
               0, 0, 2, 0});
}

TEST(Wide64Atomics, ExchAndOrXorActPerWord) {
  // exch: lanes 0..3 exchange (t+1 : t+1 << 4) into M = 0x00000077_00000066: lane t gets lane
  // t-1's value (lane 0 M's), M ends lane 3's (4, 0x40). Olds at words 2 + 2t.
  Memory init{};
  init[0] = 0x66;
  init[1] = 0x77;
  expectWords("add.s32 %r1, %r7, 1;\nshl.b32 %r2, %r1, 4;\n"
              "cvt.u64.u32 %rd3, %r2;\nshl.b64 %rd3, %rd3, 32;\ncvt.u64.u32 %rd4, %r1;\nor.b64 %rd3, %rd3, %rd4;\n"
              "atom.global.exch.b64 %rd5, [%rd1], %rd3;\nst.global.u64 [%rd2+8], %rd5;\n",
              4, {4, 0x40, 0x66, 0x77, 1, 0x10, 2, 0x20, 3, 0x30}, init);
  // and/or/xor with 0xf0f0f0f0_0000ffff on words 0..5 = 0x12345678_ffff0000 each; the old value of
  // each (the same) at words 6, 7.
  Memory init2{};
  for (size_t i = 0; i < 6; i += 2) init2[i] = 0xffff0000, init2[i + 1] = 0x12345678;
  expectWords("mov.u64 %rd3, -1085102596613406721;\n"  // 0xf0f0f0f0_0000ffff
              "atom.global.and.b64 %rd5, [%rd1], %rd3;\natom.global.or.b64 %rd6, [%rd1+8], %rd3;\n"
              "atom.global.xor.b64 %rd7, [%rd1+16], %rd3;\nst.global.u64 [%rd1+24], %rd6;\n",
              1,
              {0x00000000, 0x10305070, 0xffffffff, 0xf2f4f6f8, 0xffffffff, 0xe2c4a688, 0xffff0000, 0x12345678},
              init2);
}

TEST(Wide64Atomics, MisalignedAtomicFaultsBeforeTheLowWordChanges) {
  Memory init{};
  init[1] = 5;
  expectFaultNothingMoved("atom.global.add.u64 %rd5, [%rd1+4], 1;\n", 1, init);
  expectWords("atom.global.add.u64 %rd5, [%rd1], 1;\n", 1, {1, 5}, init);
}

TEST(Wide64Atomics, RefusesTheOnesThatDoNotSplitPerWord) {
  for (const char* text : {"atom.global.min.u64 %rd5, [%rd1], %rd2;", "atom.global.max.s64 %rd5, [%rd1], %rd2;",
                           "atom.global.cas.b64 %rd5, [%rd1], %rd2, %rd3;"}) {
    auto module = ptx::parse(kernel(std::string(text) + "\n"), "t.ptx");
    ASSERT_TRUE(module.ok()) << module.error().str();
    LowerOptions options;
    options.params = {0};
    auto p = lower(*module, options);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.error().kind, ErrorKind::PtxUnsupported) << p.error().str();
    EXPECT_NE(p.error().message.find(text), std::string::npos) << p.error().str();
    EXPECT_NE(p.error().message.find("does not split into one atomic per word"), std::string::npos) << p.error().str();
  }
}

}  // namespace
}  // namespace qgpu::lower
