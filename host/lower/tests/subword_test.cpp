// qgpu/host/lower/tests/subword_test.cpp — byte and halfword loads and stores, ld/st.v2/.v4 and
// ld/st.volatile, lowered and run in the reference interpreter AND run by the PTX evaluator
// (ptxeval), each against hand-worked words: the two oracles agree because both equal the hand
// value. Hand-written PTX in the shapes clang and nvcc emit (label cpu; the CUDA twins are the
// catalog kernels byte_flags, bool_any, uchar_histogram and vec4_sum under both compilers).
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "host/lower/tests/both_oracles.h"

namespace qgpu::lower {
namespace {

using both::kWords;
using both::Memory;

// One kernel `k(.param .u64 buf)`: %rd1 = buf, %r7 = tid.x, then `body`.
std::string kernel(const std::string& body) { return both::bufKernel("", body); }

Expected<both::Both> runBoth(const std::string& body, uint32_t threads, const Memory& initial = {},
                             uint32_t grid = 1) {
  return both::runBoth(kernel(body), threads, initial, grid);
}

// Both oracles finish and leave words [0, want.size()) equal to `want`.
void expectWords(const std::string& body, uint32_t threads, const std::vector<uint32_t>& want,
                 const Memory& initial = {}, uint32_t grid = 1) {
  both::expectBothWords(runBoth(body, threads, initial, grid), want);
}

// buf[tid] as a byte address: %rd2 = buf + tid * scale.
std::string elementAddress(int scale) {
  return "mul.wide.u32 %rd2, %r7, " + std::to_string(scale) + ";\nadd.s64 %rd2, %rd1, %rd2;\n";
}

TEST(SubwordStore, AdjacentBytesOfDifferentLanesAndWarpsAllSurvive) {
  // 16 threads (4 warps): buf[t] = t + 1 as bytes: word w = bytes 4w+1 .. 4w+4, little-endian.
  // A word load / insert / word store expansion would keep one byte per word.
  expectWords(elementAddress(1) + "add.s32 %r1, %r7, 1;\ncvt.u16.u32 %rs1, %r1;\n"
                                  "st.global.u8 [%rd2], %rs1;\n",
              16, {0x04030201u, 0x08070605u, 0x0c0b0a09u, 0x100f0e0du, 0});
}

TEST(SubwordStore, BytesOfDifferentCtasToOneWordAllSurvive) {
  // 4 CTAs of 1 thread: buf[ctaid] = 0xa0 + ctaid.
  expectWords("mov.u32 %r2, %ctaid.x;\ncvt.u64.u32 %rd2, %r2;\nadd.s64 %rd2, %rd1, %rd2;\n"
              "add.s32 %r1, %r2, 160;\nst.global.u8 [%rd2], %r1;\n",
              1, {0xa3a2a1a0u}, {}, 4);
}

TEST(SubwordStore, HalfwordsKeepTheOtherHalfAndDropHighBits) {
  // Lane t stores the low half of tid + 0xbeef0001 (= t + 1) at byte 2t; lane 0 is guarded off.
  // Word 0 = 0x11223344 before: lane 1 writes half 1 -> 0x00023344. Word 1 = 0xffffffff before:
  // lanes 2 and 3 write halves 0 and 1 -> 0x00040003.
  Memory init{};
  init[0] = 0x11223344;
  init[1] = 0xffffffff;
  expectWords(elementAddress(2) + "add.s32 %r1, %r7, -1091633151;\n"  // 0xbeef0001
                                  "setp.ne.s32 %p1, %r7, 0;\n@%p1 st.global.u16 [%rd2], %r1;\n",
              4, {0x00023344u, 0x00040003u}, init);
}

TEST(SubwordStore, SharedBytesOfFourWarpsThenAWordRead) {
  // s[t] = t (bytes, 16 threads), barrier, thread t < 4 copies shared word t to buf[t].
  expectWords(".shared .align 4 .b8 s[16];\n"
              "mov.u32 %r2, s;\nadd.s32 %r3, %r2, %r7;\nst.shared.u8 [%r3], %r7;\nbar.sync 0;\n"
              "setp.lt.u32 %p1, %r7, 4;\n@!%p1 bra DONE;\nshl.b32 %r4, %r7, 2;\nadd.s32 %r4, %r2, %r4;\n"
              "ld.shared.u32 %r5, [%r4];\n" + elementAddress(4) + "st.global.u32 [%rd2], %r5;\nDONE:\n",
              16, {0x03020100u, 0x07060504u, 0x0b0a0908u, 0x0f0e0d0cu});
}

TEST(SubwordLoad, SignAndZeroExtendAsPtxSays) {
  // Word 0 bytes 80 7f 01 ff (0xff017f80), word 1 halves 8001, 7fff (0x7fff8001). Thread 0 writes
  // ld.s8/ld.u8 of byte 0, ld.s8 of byte 3, ld.s16/ld.u16 of half 0, ld.s16 of half 1 to words
  // 2..7.
  Memory init{};
  init[0] = 0xff017f80u;
  init[1] = 0x7fff8001u;
  expectWords("ld.global.s8 %r1, [%rd1];\nld.global.u8 %r2, [%rd1];\nld.global.s8 %r3, [%rd1+3];\n"
              "ld.global.s16 %r4, [%rd1+4];\nld.global.u16 %r5, [%rd1+4];\nld.global.s16 %r6, [%rd1+6];\n"
              "st.global.u32 [%rd1+8], %r1;\nst.global.u32 [%rd1+12], %r2;\nst.global.u32 [%rd1+16], %r3;\n"
              "st.global.u32 [%rd1+20], %r4;\nst.global.u32 [%rd1+24], %r5;\nst.global.u32 [%rd1+28], %r6;\n",
              1, {0xff017f80u, 0x7fff8001u, 0xffffff80u, 0x80u, 0xffffffffu, 0xffff8001u, 0x8001u, 0x7fffu},
              init);
}

TEST(SubwordLoad, OddHalfwordAddressFaultsInBothOracles) {
  // A GPU faults on a misaligned ld.u16; so do the machine (the lowering's word address keeps
  // bit 0) and ptxeval. The failing twin: the even address next to it loads.
  for (const char* off : {"1", "3"}) {
    auto r = runBoth(std::string("ld.global.u16 %r1, [%rd1+") + off + "];\nst.global.u32 [%rd1+8], %r1;\n", 1);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << off;
    EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault) << off;
  }
  Memory init{};
  init[0] = 0x12345678u;
  expectWords("ld.global.u16 %r1, [%rd1+2];\nst.global.u32 [%rd1+8], %r1;\n", 1, {0x12345678u, 0, 0x1234u}, init);
}

TEST(SubwordStore, OddHalfwordStoreFaultsInBothOraclesAndStoresNothing) {
  auto r = runBoth("st.global.u16 [%rd1+5], %r7;\n", 1);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault);
  EXPECT_NE(r->machine.fault.message.find("not a multiple of 2"), std::string::npos) << r->machine.fault.str();
  EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault);
  EXPECT_EQ(r->machine.global[1], 0u);
}

TEST(SubwordStore, LowersToTheLaneSerialOpNotAWordStore) {
  auto r = runBoth("st.global.u8 [%rd1+1], %r7;\nst.global.b16 [%rd1+2], %r7;\n", 1);
  ASSERT_TRUE(r.ok()) << r.error().str();
  const std::string listing = machine::print(r->program);
  EXPECT_NE(listing.find("st.b8.global"), std::string::npos) << listing;
  EXPECT_NE(listing.find("st.b16.global"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("st.global"), std::string::npos) << listing;  // no word store
}

TEST(VectorAccess, V4LoadAndV2StoreSplitIntoWordsInElementOrder) {
  // Thread t loads the four words of vector t (16 bytes at buf + 16t) and stores (x+y, z+w) at
  // buf + 64 + 8t.
  Memory init{};
  for (uint32_t i = 0; i < 8; ++i) init[i] = 1u << i;
  expectWords(elementAddress(16) + "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];\n"
                                   "add.s32 %r5, %r1, %r2;\nadd.s32 %r6, %r3, %r4;\n"
                                   "mul.wide.u32 %rd3, %r7, 8;\nadd.s64 %rd3, %rd1, %rd3;\n"
                                   "st.global.v2.u32 [%rd3+64], {%r5, %r6};\n",
              2, {1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0, 3, 12, 48, 192}, init);
}

TEST(VectorAccess, V4BytesAndV2HalvesSplitIntoSubwordAccesses) {
  // ld.v4.u8 of word 0 (bytes 01 02 03 04), stored back reversed with st.v4.u8 into word 1;
  // ld.v2.u16 of word 0 (0x0201, 0x0403) stored swapped with st.v2.u16 into word 2.
  Memory init{};
  init[0] = 0x04030201u;
  expectWords("ld.global.v4.u8 {%rs1, %rs2, %rs3, %rs4}, [%rd1];\n"
              "st.global.v4.u8 [%rd1+4], {%rs4, %rs3, %rs2, %rs1};\n"
              "ld.global.v2.u16 {%rs5, %rs6}, [%rd1];\nst.global.v2.u16 [%rd1+8], {%rs6, %rs5};\n",
              1, {0x04030201u, 0x01020304u, 0x02010403u}, init);
}

TEST(VectorAccess, VolatileVectorAndScalarAccessesArePlain) {
  Memory init{};
  init[0] = 5;
  init[1] = 6;
  expectWords("ld.volatile.global.v2.u32 {%r1, %r2}, [%rd1];\nadd.s32 %r3, %r1, %r2;\n"
              "st.volatile.global.u32 [%rd1+8], %r3;\n",
              1, {5, 6, 11}, init);
}

TEST(VectorAccess, RefusesAVectorLoadIntoItsOwnAddressRegister) {
  // Split in order, element 0 would overwrite the address of element 1.
  auto module = ptx::parse(kernel(".shared .align 8 .b8 s[8];\nmov.u32 %r1, s;\n"
                                  "ld.shared.v2.u32 {%r1, %r2}, [%r1];\n"),
                           "t.ptx");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(module.error().message.find("own address register"), std::string::npos) << module.error().str();
  // The failing twin: the address register as the LAST element is fine (read before written).
  auto ok = ptx::parse(kernel(".shared .align 8 .b8 s[8];\nmov.u32 %r2, s;\n"
                              "ld.shared.v2.u32 {%r1, %r2}, [%r2];\n"),
                       "t.ptx");
  EXPECT_TRUE(ok.ok()) << ok.error().str();
}

// ---- Vector alignment: a GPU faults on a .v2/.v4 access whose address is not a multiple of the
// vector's size (8 or 16 bytes for 32-bit elements, 4 for v2.u16/v4.u8, 2 for v2.u8), on the
// whole access, before any element moves. Each case has its aligned twin.

TEST(VectorAlignment, MisalignedV4LoadFaultsInBothOraclesAndItsAlignedTwinLoads) {
  // buf + 4, + 8, + 12 are word-aligned (every element access alone would be fine) but not
  // 16-byte aligned; buf + 16 is.
  for (const char* off : {"4", "8", "12"}) {
    auto r = runBoth(std::string("ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1+") + off +
                         "];\nst.global.u32 [%rd1+64], %r1;\n",
                     1);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << off << "\n" << machine::print(r->program);
    EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault) << off;
    EXPECT_EQ(r->machine.global[16], 0u) << off;
  }
  Memory init{};
  init[4] = 7;
  expectWords("ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1+16];\nst.global.u32 [%rd1+64], %r1;\n", 1,
              {0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}, init);
}

TEST(VectorAlignment, OneMisalignedLaneFaultsTheWholeStoreAndNothingIsWritten) {
  // Lanes 0, 1, 3 store at buf + 16t; lane 2 at buf + 16t + 8, which is 8- but not 16-byte
  // aligned. Op-level: the element-0 store faults for every lane, so memory stays all zero. The
  // twin with a v2 store (8-byte vectors) at the same addresses is aligned and stores.
  const std::string addr = elementAddress(16) + "setp.eq.u32 %p1, %r7, 2;\nselp.b64 %rd3, 8, 0, %p1;\n"
                                                "add.s64 %rd2, %rd2, %rd3;\nadd.s32 %r1, %r7, 1;\n";
  auto r = runBoth(addr + "st.global.v4.u32 [%rd2], {%r1, %r1, %r1, %r1};\n", 4);
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->machine.status, oracle::RunStatus::Fault) << machine::print(r->program);
  EXPECT_NE(r->machine.fault.message.find("lane 2"), std::string::npos) << r->machine.fault.str();
  EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault);
  for (uint32_t w = 0; w < 16; ++w) EXPECT_EQ(r->machine.global[w], 0u) << "word " << w;
  expectWords(addr + "st.global.v2.u32 [%rd2], {%r1, %r1};\n", 4,
              {1, 1, 0, 0, 2, 2, 0, 0, 0, 0, 3, 3, 4, 4, 0, 0});
}

TEST(VectorAlignment, SubwordVectorsNeedTheirOwnSize) {
  // v2.u16 and v4.u8 are 4-byte vectors, v2.u8 a 2-byte one: buf + 2 faults the first two,
  // buf + 1 the last; the byte-aligned scalar twin (ld.u8 at buf + 1) is fine.
  for (const char* text : {"ld.global.v2.u16 {%rs1, %rs2}, [%rd1+2];\n",
                           "ld.global.v4.u8 {%rs1, %rs2, %rs3, %rs4}, [%rd1+2];\n",
                           "ld.global.v2.u8 {%rs1, %rs2}, [%rd1+1];\n",
                           "st.global.v4.u8 [%rd1+2], {%rs1, %rs1, %rs1, %rs1};\n",
                           "st.global.v2.u8 [%rd1+3], {%rs1, %rs1};\n"}) {
    auto r = runBoth(text, 1);
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->machine.status, oracle::RunStatus::Fault) << text << machine::print(r->program);
    EXPECT_EQ(r->ptx.status, ptxeval::EvalStatus::Fault) << text;
  }
  Memory init{};
  init[0] = 0x04030201u;
  expectWords("ld.global.v2.u8 {%rs1, %rs2}, [%rd1+2];\nld.global.u8 %rs3, [%rd1+1];\n"
              "st.global.v2.u8 [%rd1+4], {%rs2, %rs3};\nst.global.v2.u16 [%rd1+8], {%rs1, %rs3};\n",
              1, {0x04030201u, 0x0204u, 0x00020003u}, init);
}

TEST(VectorAlignment, ConstantAddressesAreDecidedAtLoweringTime) {
  // A shared vector at a constant address: [s+4] is misaligned for v2 (8 bytes), [s+8] is not;
  // the misaligned one lowers to a constant faulting address (no run-time check ops).
  const std::string decl = ".shared .align 16 .b8 s[32];\n";
  auto bad = runBoth(decl + "ld.shared.v2.u32 {%r1, %r2}, [s+4];\n", 1);
  ASSERT_TRUE(bad.ok()) << bad.error().str();
  EXPECT_EQ(bad->machine.status, oracle::RunStatus::Fault) << machine::print(bad->program);
  EXPECT_EQ(bad->ptx.status, ptxeval::EvalStatus::Fault);
  auto good = runBoth(decl + "mov.u32 %r1, 5;\nst.shared.v2.u32 [s+8], {%r1, %r1};\n"
                             "ld.shared.v2.u32 {%r2, %r3}, [s+8];\nadd.s32 %r4, %r2, %r3;\n"
                             "st.global.u32 [%rd1], %r4;\n",
                      1);
  ASSERT_TRUE(good.ok()) << good.error().str();
  ASSERT_EQ(good->machine.status, oracle::RunStatus::Finished) << good->machine.fault.str();
  EXPECT_EQ(good->machine.global[0], 10u);
  EXPECT_EQ(good->ptx.global[0], 10u);
  const std::string listing = machine::print(good->program);
  EXPECT_EQ(listing.find("selp"), std::string::npos) << listing;  // decided, not checked
}

TEST(VectorAccess, RefusesA64BitRegisterInAListOfWords) {
  // ptxas rejects it; split into scalar stores it would pass the scalar type check.
  auto module = ptx::parse(kernel("st.global.v2.u32 [%rd1], {%r1, %rd2};\n"), "t.ptx");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().kind, ErrorKind::PtxInvalid);
  EXPECT_NE(module.error().message.find("'%rd2' is 64-bit in a list of .u32 elements"), std::string::npos)
      << module.error().str();
  auto ok = ptx::parse(kernel("st.global.v2.u32 [%rd1], {%r1, %r2};\n"), "t.ptx");  // the twin
  EXPECT_TRUE(ok.ok()) << ok.error().str();
}

TEST(VectorAccess, RefusesAListOfTheWrongLength) {
  auto module = ptx::parse(kernel("ld.global.v4.u32 {%r1, %r2}, [%rd1];\n"), "t.ptx");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().kind, ErrorKind::PtxSyntax);
  EXPECT_NE(module.error().message.find("list of 4"), std::string::npos) << module.error().str();
}

}  // namespace
}  // namespace qgpu::lower
