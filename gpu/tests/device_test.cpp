// qgpu/gpu/tests/device_test.cpp — the runner on a real NVIDIA GPU (CTest label `gpu`).
//
// Every test skips with the reason when Runner::open() reports NoDevice, and the binary then exits
// 77 (skip_main.cpp) so CTest shows it as skipped, never as passed. The kernels are hand-written
// PTX so that this test depends on nothing but the runner.
#include <gtest/gtest.h>

#include "gpu/runner.h"

namespace qgpu::gpu {
namespace {

// out[tid + ctaid*ntid] = 3*global_tid + k; thread 0 of CTA 0 also writes out[-1] when bad != 0.
constexpr const char* kPtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry fill(.param .u64 fill_param_0, .param .u32 fill_param_1, .param .u32 fill_param_2)
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [fill_param_0];
  ld.param.u32 %r1, [fill_param_1];
  ld.param.u32 %r2, [fill_param_2];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ntid.x;
  mad.lo.s32 %r6, %r4, %r5, %r3;
  mad.lo.s32 %r7, %r6, 3, %r1;
  mul.wide.s32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  setp.eq.s32 %p1, %r2, 0;
  setp.ne.s32 %p2, %r6, 0;
  or.pred %p1, %p1, %p2;
  @%p1 bra DONE;
  st.global.u32 [%rd2+-4], %r7;
DONE:
  ret;
}
)";

#define QGPU_OPEN_OR_SKIP(runner)                                                 \
  auto runner##_open = Runner::open();                                            \
  if (!runner##_open.ok() && runner##_open.error().kind == ErrorKind::NoDevice) { \
    GTEST_SKIP() << "no GPU: " << runner##_open.error().message;                   \
  }                                                                               \
  ASSERT_TRUE(runner##_open.ok()) << runner##_open.error().str();                 \
  Runner& runner = *runner##_open

GpuLaunch fill(uint32_t offset, uint32_t k, uint32_t bad) {
  GpuLaunch l;
  l.ptx = kPtx;
  l.entry = "fill";
  l.gridX = 2;
  l.blockX = 8;
  l.global.assign(126, 0x11111111u);
  l.params = {offset, k, bad};
  l.paramIsPointer = {true, false, false};
  return l;
}

TEST(GpuDevice, RunsAKernelAndReturnsItsMemory) {
  QGPU_OPEN_OR_SKIP(runner);
  auto r = runner.run(fill(40, 7, 0));  // words 10..25
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->guardsIntact) << r->guardReport;
  for (uint32_t w = 0; w < 126; ++w) {
    uint32_t want = (w >= 10 && w < 26) ? 3 * (w - 10) + 7 : 0x11111111u;
    EXPECT_EQ(r->global[w], want) << "word " << w;
  }
}

TEST(GpuDevice, CatchesAnOutOfBoundsWriteInTheGuard) {
  QGPU_OPEN_OR_SKIP(runner);
  auto r = runner.run(fill(0, 7, 1));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->guardsIntact);
  EXPECT_NE(r->guardReport.find("image offset -1"), std::string::npos) << r->guardReport;
}

TEST(GpuDevice, ReportsTheJitLogForInvalidPtx) {
  QGPU_OPEN_OR_SKIP(runner);
  GpuLaunch l = fill(0, 0, 0);
  l.ptx.replace(l.ptx.find("mad.lo.s32 %r7"), 10, "bogus.op.s32");
  auto r = runner.run(l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Device);
  EXPECT_NE(r.error().message.find("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"),
            std::string::npos)
      << r.error().message;
  // The runner recovers: the next kernel still runs.
  EXPECT_TRUE(runner.run(fill(0, 1, 0)).ok());
}

}  // namespace
}  // namespace qgpu::gpu
