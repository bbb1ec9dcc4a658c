// qgpu/host/lower/tests/address64_test.cpp — sound narrowing of 64-bit addresses (docs/lowering.md,
// "Sound narrowing"), on hand-written PTX. The rule pinned down: the machine forms the exact
// 64-bit address (mod 2^64, as a GPU does) and accesses memory only if it lies in the machine's
// memory [0, 504); otherwise the run ends in a fault. Expected memory and statuses are worked out
// by hand from that rule in each test's comment; a data-dependent index (loaded from memory, so
// no bound is known at lowering time) is used throughout so that the check cannot be skipped.
#include <gtest/gtest.h>

#include <string>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

// out[x + t] = t + 100 via 64-bit arithmetic, x = a[0] (signed, sign-extended); `access` is the
// memory instruction on %rd7 (the 64-bit address of out[x + t]); `shiftX` shifts x left in 64
// bits first (wrap-around tests). a is at byte 0 (4 words), out at byte 16 (8 words).
std::string indexKernel(const std::string& access, int shiftX = 0) {
  std::string shift = shiftX ? "shl.b64 %rd3, %rd3, " + std::to_string(shiftX) + ";\n" : "";
  return ".version 6.4\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(\n.param .u64 k_param_0,\n.param .u64 k_param_1\n)\n{\n"
         ".reg .b32 %r<8>;\n.reg .b64 %rd<10>;\n"
         "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\n"
         "ld.global.u32 %r1, [%rd1];\ncvt.s64.s32 %rd3, %r1;\n" + shift +
         "mov.u32 %r2, %tid.x;\nadd.s32 %r3, %r2, 100;\ncvt.u64.u32 %rd4, %r2;\n"
         "add.s64 %rd5, %rd3, %rd4;\nshl.b64 %rd6, %rd5, 2;\nadd.s64 %rd7, %rd2, %rd6;\n" + access +
         "\nret;\n}\n";
}
const std::string kStore = "st.global.u32 [%rd7], %r3;";

struct Outcome {
  oracle::RunStatus status = oracle::RunStatus::Finished;
  std::array<uint32_t, machine::kGlobalWords> global{};
  std::string fault;
};

// Lowers `text` with a at byte 0 and out at byte 16, a[0] = x, and runs 4 threads.
Outcome runWith(const std::string& text, int64_t x) {
  Outcome r;
  auto module = ptx::parse(text, "<test>");
  EXPECT_TRUE(module.ok()) << module.error().str();
  if (!module.ok()) return r;
  LowerOptions opt;
  opt.params = {0, 16};
  auto program = lower(*module, opt);
  EXPECT_TRUE(program.ok()) << program.error().str();
  if (!program.ok()) return r;
  machine::Launch launch;
  launch.blockX = 4;
  launch.global[0] = static_cast<uint32_t>(x);
  auto run = oracle::run(*program, launch, oracle::RunOptions{100'000, false});
  EXPECT_TRUE(run.ok()) << run.error().str();
  if (!run.ok()) return r;
  r.status = run->status;
  r.global = run->global;
  r.fault = run->fault.message;
  return r;
}

TEST(Address64, InRangeIndexStores) {
  // x = 0: out[t] = t + 100 (words 4..7).
  Outcome r = runWith(indexKernel(kStore), 0);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
}

TEST(Address64, IndexTwoToThe30FaultsInsteadOfWrappingTo32Bits) {
  // x = 2^30: byte offset 2^32 + 4t, address 16 + 2^32 + 4t: above memory. Truncated to 32 bits
  // it would be 16 + 4t, out[t] -- the wrong "match" this test exists for.
  Outcome r = runWith(indexKernel(kStore), int64_t{1} << 30);
  EXPECT_EQ(r.status, oracle::RunStatus::Fault);
  for (int w = 1; w < machine::kGlobalWords; ++w) EXPECT_EQ(r.global[w], 0u) << "word " << w;
}

TEST(Address64, LoadAndAtomicAtAFarAddressFaultToo) {
  const std::string load = "ld.global.u32 %r4, [%rd7];\nst.global.u32 [%rd2], %r4;";
  const std::string atom = "atom.global.add.u32 %r4, [%rd7], %r3;";
  for (const auto& access : {load, atom}) {
    EXPECT_EQ(runWith(indexKernel(access), int64_t{1} << 30).status, oracle::RunStatus::Fault) << access;
    EXPECT_EQ(runWith(indexKernel(access), 0).status, oracle::RunStatus::Finished) << access;  // twin
  }
}

TEST(Address64, NegativeIndexInsideMemoryWritesTheWordBelowTheArray) {
  // x = -1: out[-1] is byte 12 = a[3], inside memory: the word a GPU with the same layout writes.
  Outcome r = runWith(indexKernel(kStore), -1);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  EXPECT_EQ(r.global[3], 100u);
  for (uint32_t t = 1; t < 4; ++t) EXPECT_EQ(r.global[3 + t], 100 + t);
}

TEST(Address64, NegativeIndexBelowMemoryFaults) {
  // x = -5: thread 0's address is 16 - 20 = -4 (2^64 - 4): below memory.
  EXPECT_EQ(runWith(indexKernel(kStore), -5).status, oracle::RunStatus::Fault);
}

TEST(Address64, WrapAroundModTwoToThe64LandsWhereAGpuLands) {
  // x = 2^30 shifted left by 32: index 2^62 + t, byte offset 2^64 + 4t = 4t (mod 2^64): out[t].
  Outcome r = runWith(indexKernel(kStore, 32), int64_t{1} << 30);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
  // x = 2^29: byte offset 2^63 + 4t, far above memory; x = 1: 2^34 + 4t.
  EXPECT_EQ(runWith(indexKernel(kStore, 32), int64_t{1} << 29).status, oracle::RunStatus::Fault);
  EXPECT_EQ(runWith(indexKernel(kStore, 32), 1).status, oracle::RunStatus::Fault);
}

TEST(Address64, AddressOffsetCarriesIntoTheHighWord) {
  // [%rd7+4] with x = 2^30 - 1 - 4 = 1073741819: 16 + 4*(2^30 - 5 + t) + 4 = 2^32 + 4t: the
  // offset's carry makes the high word 1, so it faults; in 32 bits it would be byte 4t.
  const std::string plus4 = "st.global.u32 [%rd7+4], %r3;";
  EXPECT_EQ(runWith(indexKernel(plus4), (int64_t{1} << 30) - 5).status, oracle::RunStatus::Fault);
  // Twin: x = -1 with +4: out[-1 + t] + 4 = out[t].
  Outcome r = runWith(indexKernel(plus4), -1);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
  // A negative offset borrows from the high word: [%rd7+-4] with x = 2^30 + 1 is
  // 16 + 2^32 + 4 + 4t - 4 = 2^32 + 16 + 4t: faults; with x = 1 it is out[t].
  const std::string minus4 = "st.global.u32 [%rd7+-4], %r3;";
  EXPECT_EQ(runWith(indexKernel(minus4), (int64_t{1} << 30) + 1).status, oracle::RunStatus::Fault);
  Outcome r2 = runWith(indexKernel(minus4), 1);
  ASSERT_EQ(r2.status, oracle::RunStatus::Finished) << r2.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r2.global[4 + t], 100 + t);
}

TEST(Address64, SubtractingAConstantCarriesToo) {
  // %rd7 = %rd6 - (-16) = out + 4(x + t): the constant-subtrahend path of 64-bit sub.
  std::string text = indexKernel(kStore);
  const std::string from = "add.s64 %rd7, %rd2, %rd6;";
  text.replace(text.find(from), from.size(), "sub.s64 %rd7, %rd6, -16;");
  EXPECT_EQ(runWith(text, int64_t{1} << 30).status, oracle::RunStatus::Fault);
  EXPECT_EQ(runWith(text, -(int64_t{1} << 30)).status, oracle::RunStatus::Fault);
  Outcome r = runWith(text, 0);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
}

TEST(Address64, AnAddressShiftedByARegisterAmountIsExact) {
  // Once refused (shl.b64 by a register had only its low half): the byte offset (x + t) << n with
  // n = 2 in a register. x = 2^30 gives 2^32 + 4t, above memory: a fault, not out[t]; x = 0 gives
  // out[t] = t + 100 (the twin); x = 2^62 (2^30 shifted left by 32 first) gives 2^64 + 4t, which
  // wraps modulo 2^64 to out[t] as on a GPU.
  auto byRegister = [](std::string text) {
    const std::string from = "shl.b64 %rd6, %rd5, 2;";
    text.replace(text.find(from), from.size(), "mov.u32 %r5, 2;\nshl.b64 %rd6, %rd5, %r5;");
    return text;
  };
  EXPECT_EQ(runWith(byRegister(indexKernel(kStore)), int64_t{1} << 30).status, oracle::RunStatus::Fault);
  Outcome r = runWith(byRegister(indexKernel(kStore)), 0);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
  Outcome w = runWith(byRegister(indexKernel(kStore, 32)), int64_t{1} << 30);
  ASSERT_EQ(w.status, oracle::RunStatus::Finished) << w.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(w.global[4 + t], 100 + t);
}

TEST(Address64, SixtyFourBitCompareSeesTheHighHalf) {
  // out[t] = (sext(x) << 32) == 0: for x = 1 the low halves are equal (0) and only the high half
  // differs, so the answer is 0; for x = 0 it is 1 (the twin).
  const std::string text =
      ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k(\n.param .u64 k_param_0,\n"
      ".param .u64 k_param_1\n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<10>;\n"
      "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\nld.global.u32 %r1, [%rd1];\n"
      "cvt.s64.s32 %rd3, %r1;\nshl.b64 %rd4, %rd3, 32;\nsetp.eq.s64 %p1, %rd4, 0;\nselp.u32 %r2, 1, 0, %p1;\n"
      "mov.u32 %r3, %tid.x;\nmul.wide.u32 %rd5, %r3, 4;\nadd.s64 %rd6, %rd2, %rd5;\n"
      "st.global.u32 [%rd6], %r2;\nret;\n}\n";
  Outcome one = runWith(text, 1);
  ASSERT_EQ(one.status, oracle::RunStatus::Finished) << one.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(one.global[4 + t], 0u);
  Outcome zero = runWith(text, 0);
  ASSERT_EQ(zero.status, oracle::RunStatus::Finished) << zero.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(zero.global[4 + t], 1u);
}

TEST(Address64, ProvablySmallIndexNeedsNoCheck) {
  // out[t] with t = %tid.x < 16 and out at byte 16: the address is < 2^31, so its low word is
  // exact and no check is emitted: the program is the same two ops as with 32-bit addresses (the
  // `* 4` a shift: cleanup's strength reduction).
  std::string text =
      ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
      ".reg .b32 %r<4>;\n.reg .b64 %rd<6>;\nld.param.u64 %rd1, [k_param_0];\nmov.u32 %r1, %tid.x;\n"
      "mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r1;\nret;\n}\n";
  auto module = ptx::parse(text, "<test>");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions opt;
  opt.params = {16};
  auto program = lower(*module, opt);
  ASSERT_TRUE(program.ok()) << program.error().str();
  EXPECT_EQ(machine::print(*program),
            ".kernel k shared 0 spill 0\nB0:\n  shl r1, %tid.x, 2\n  st.global [r1+16], %tid.x\n  exit\n");
}

}  // namespace
}  // namespace qgpu::lower
