// qgpu/harness/tests/gpu_cases_test.cpp — the GPU leg's launch as built from a kernel file
// (harness::gpuLaunch), without compiling: the launch line's `shared=W` reaches cuLaunchKernel as
// 4W dynamic shared bytes (gpu_runner_test checks that the runner passes it on). Label cpu.
#include "harness/gpu_cases.h"

#include <gtest/gtest.h>

namespace qgpu::harness {
namespace {

Expected<gpu::GpuLaunch> launchOf(const std::string& launchLine) {
  const std::string text = "// qgpu-kernel: k\n// summary: s\n// launch: " + launchLine +
                           "\n// param: out out i32[4]\n// expect: out = 0 0 0 0\n\n"
                           "__global__ void k(int* out) {}\n";
  QGPU_TRY(spec, kernels::parseKernelText(text, "k.cu"));
  QGPU_TRY(image, kernels::layout(spec));
  BuiltKernel kernel;
  kernel.entry = "k";
  kernel.image = image;
  return gpuLaunch(spec, kernel);
}

TEST(GpuLaunchFromKernelFile, CarriesTheLaunchLinesDynamicSharedBytes) {
  auto withShared = launchOf("grid=2 block=4 shared=3");
  ASSERT_TRUE(withShared.ok()) << withShared.error().str();
  EXPECT_EQ(withShared->dynamicSharedBytes, 12u);  // 3 words
  EXPECT_EQ(withShared->gridX, 2u);
  EXPECT_EQ(withShared->blockX, 4u);
  auto without = launchOf("grid=1 block=4");
  ASSERT_TRUE(without.ok()) << without.error().str();
  EXPECT_EQ(without->dynamicSharedBytes, 0u);
}

}  // namespace
}  // namespace qgpu::harness
