// GpuSession: the GPU backend as the harness drives it, on the fake driver of gpu/tests (loaded
// through QGPU_LIBCUDA). The fake runs no real PTX, so these tests pin down the plumbing: the
// no-device verdict, and that a catalog kernel reaches the driver under its PTX entry name (the
// mangled one) rather than being refused by the host.
#include <cstdlib>

#include <gtest/gtest.h>

#include "harness/check.h"

namespace qgpu::harness {
namespace {

InterpCase builtVadd() {
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/vadd.cu");
  EXPECT_TRUE(spec.ok());
  return runInterpCase(*spec, host::Compiler::Clang);
}

TEST(GpuSession, NoDriverMakesEveryCaseInconclusive) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  setenv("QGPU_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  GpuSession gpu;
  unsetenv("QGPU_LIBCUDA");
  EXPECT_FALSE(gpu.available());
  EXPECT_EQ(gpu.description().rfind("no device", 0), 0u) << gpu.description();
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/vadd.cu");
  ASSERT_TRUE(spec.ok());
  CaseResult r = gpu.compare(*spec, builtVadd());
  EXPECT_EQ(r.verdict, Verdict::Inconclusive);
  EXPECT_EQ(r.backend, Backend::Gpu);
}

TEST(GpuSession, KernelReachesTheDriverUnderItsPtxEntryName) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  setenv("QGPU_LIBCUDA", QGPU_FAKE_CUDA_PATH, 1);
  GpuSession gpu;
  unsetenv("QGPU_LIBCUDA");
  ASSERT_TRUE(gpu.available()) << gpu.description();
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/vadd.cu");
  ASSERT_TRUE(spec.ok());
  InterpCase interp = builtVadd();
  ASSERT_TRUE(interp.built()) << interp.result.detail;
  ASSERT_NE(interp.kernel->entry, "vadd");  // clang keeps the C++ mangled name
  CaseResult r = gpu.compare(*spec, interp);
  // The fake driver knows no kernel of that name: the failure must come from the driver's
  // function lookup, not from the host refusing the launch.
  EXPECT_EQ(r.verdict, Verdict::Mismatch);
  EXPECT_NE(r.detail.find("cuModuleGetFunction"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace qgpu::harness
