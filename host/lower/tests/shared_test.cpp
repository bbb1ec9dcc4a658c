// qgpu/host/lower/tests/shared_test.cpp — shared memory as CUDA code declares it: module-scope
// variables (clang's `.visible` / `.weak` forms), the launch's dynamic `.extern .shared` array
// sized by LowerOptions::dynamicSharedWords, and the 126-word limit over all of them. Hand-written
// PTX, run in the reference interpreter; expected words worked out by hand (label cpu).
#include <gtest/gtest.h>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

constexpr const char* kHead = ".version 6.4\n.target sm_75\n.address_size 64\n";

// Lowers `text` (one kernel with one .u64 pointer parameter `out` at byte 0) and runs it with
// `threads` threads; returns the first `words` words of global memory.
Expected<std::vector<uint32_t>> run(const std::string& text, uint32_t dynamicWords, uint32_t threads,
                                    size_t words) {
  QGPU_TRY(module, ptx::parse(text, "t.ptx"));
  LowerOptions options;
  options.params = {0};
  options.dynamicSharedWords = dynamicWords;
  QGPU_TRY(program, lower(module, options));
  machine::Launch launch;
  launch.blockX = threads;
  QGPU_TRY(result, oracle::run(program, launch, oracle::RunOptions{100000, false}));
  if (result.status != oracle::RunStatus::Finished) return result.fault;
  return std::vector<uint32_t>(result.global.begin(), result.global.begin() + static_cast<long>(words));
}

// Every thread t writes t+1 to dyn[t] and 10*(t+1) to the module array a[t]; after the barrier
// thread t reads dyn[3-t] + a[t] + the `.weak` word w (set to 100 by thread 0 before the barrier).
std::string kernelText(const std::string& dynDecl) {
  return std::string(kHead) +
         ".visible .shared .align 4 .b8 a[16];\n"
         ".weak .shared .align 4 .u32 w;\n" + dynDecl +
         ".visible .entry k(.param .u64 out)\n{\n"
         ".reg .pred %p<2>;\n.reg .b32 %r<12>;\n.reg .b64 %rd<4>;\n"
         "ld.param.u64 %rd1, [out];\n"
         "mov.u32 %r1, %tid.x;\n"
         "shl.b32 %r2, %r1, 2;\n"
         "add.s32 %r3, %r1, 1;\n"
         "mov.u32 %r4, dyn;\n"
         "add.s32 %r5, %r4, %r2;\n"
         "st.shared.u32 [%r5], %r3;\n"
         "mul.lo.s32 %r6, %r3, 10;\n"
         "mov.u32 %r7, a;\n"
         "add.s32 %r8, %r7, %r2;\n"
         "st.shared.u32 [%r8], %r6;\n"
         "setp.eq.s32 %p1, %r1, 0;\n"
         "@%p1 st.shared.u32 [w], 100;\n"
         "bar.sync 0;\n"
         "sub.s32 %r9, 12, %r2;\n"
         "add.s32 %r9, %r4, %r9;\n"
         "ld.shared.u32 %r10, [%r9];\n"
         "ld.shared.u32 %r11, [%r8];\n"
         "add.s32 %r10, %r10, %r11;\n"
         "ld.shared.u32 %r11, [w];\n"
         "add.s32 %r10, %r10, %r11;\n"
         "cvta.to.global.u64 %rd2, %rd1;\n"
         "mul.wide.u32 %rd3, %r1, 4;\n"
         "add.s64 %rd2, %rd2, %rd3;\n"
         "st.global.u32 [%rd2], %r10;\n"
         "ret;\n}\n";
}

TEST(LowerShared, ModuleAndDynamicSharedArraysHoldTheirOwnWords) {
  auto got = run(kernelText(".extern .shared .align 16 .b8 dyn[];\n"), 4, 4, 4);
  ASSERT_TRUE(got.ok()) << got.error().str();
  // thread t: dyn[3-t] = 4-t, a[t] = 10(t+1), w = 100.
  EXPECT_EQ(*got, (std::vector<uint32_t>{4 + 10 + 100, 3 + 20 + 100, 2 + 30 + 100, 1 + 40 + 100}));
}

TEST(LowerShared, DynamicWordsCountAgainstTheMachine) {
  // a (4 words) + w (1) + dyn aligned to 16 bytes (from word 8) + 118 words = 126: fits.
  auto fits = run(kernelText(".extern .shared .align 16 .b8 dyn[];\n"), 118, 4, 4);
  EXPECT_TRUE(fits.ok()) << fits.error().str();
  auto over = run(kernelText(".extern .shared .align 16 .b8 dyn[];\n"), 119, 4, 4);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(over.error().message.find("127 words of shared memory (119 of them dynamic, `shared=`)"),
            std::string::npos)
      << over.error().str();
}

TEST(LowerShared, UnnamedModuleVariablesTakeNoWords) {
  // A module variable the kernel never names (another kernel's) is not laid out: 122 dynamic
  // words still fit next to a (4) + w (1), since `unused` (64 words) is left out.
  std::string text = kernelText(".shared .align 4 .b8 unused[256];\n.extern .shared .align 4 .b8 dyn[];\n");
  auto got = run(text, 121, 4, 4);
  EXPECT_TRUE(got.ok()) << got.error().str();
}

TEST(LowerShared, ExternArraysAlias) {
  // Two `extern __shared__` arrays start at the same byte, as on a GPU: a store through one is
  // read through the other.
  std::string text = std::string(kHead) +
                     ".extern .shared .align 4 .b8 d1[];\n.extern .shared .align 4 .b8 d2[];\n"
                     ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<3>;\n"
                     "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n"
                     "st.shared.u32 [d1+4], 77;\nld.shared.u32 %r1, [d2+4];\n"
                     "st.global.u32 [%rd2], %r1;\nret;\n}\n";
  auto got = run(text, 2, 1, 1);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ((*got)[0], 77u);
}

}  // namespace
}  // namespace qgpu::lower
