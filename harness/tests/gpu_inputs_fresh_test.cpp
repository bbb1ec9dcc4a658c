// qgpu/harness/tests/gpu_inputs_fresh_test.cpp — the exported GPU inputs are what the host produces
// now (CTest label `tools`: needs clang-14 and nvcc).
//
// The GPU machine runs reports/gpu/inputs/, and gpu_recorded_test takes the host's PTX from there;
// both are only meaningful while that PTX equals what `qgpu gpu export` would write today. A
// changed compiler, dialect header, kernel or parser shows up here, with the fix: re-export, then
// re-record on a GPU. Skipped with the reason when there are no inputs or no compilers.
#include <gtest/gtest.h>

#include <filesystem>

#include "gpu/inputs.h"
#include "harness/gpu_cases.h"

namespace qgpu::gpu {
namespace {

using harness::buildInputs;

TEST(GpuInputsFresh, ExportedPtxEqualsWhatTheCompilersProduceNow) {
  const std::string dir = std::string(QGPU_SOURCE_DIR) + "/reports/gpu/inputs";
  if (!std::filesystem::exists(dir + "/manifest.txt")) {
    GTEST_SKIP() << "no exported inputs at " << dir << " (qgpu gpu export)";
  }
  if (!host::toolAvailable(host::Compiler::Clang) || !host::toolAvailable(host::Compiler::Nvcc)) {
    GTEST_SKIP() << "clang-14 or nvcc missing";
  }
  auto committed = readInputs(dir);
  ASSERT_TRUE(committed.ok()) << committed.error().str();
  auto specs = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(specs.ok()) << specs.error().str();
  auto now = buildInputs(*specs, {host::Compiler::Clang, host::Compiler::Nvcc}, "now");
  ASSERT_TRUE(now.ok()) << now.error().str();
  for (const GpuCase& c : now->cases) {
    const GpuCase* old = nullptr;
    for (const GpuCase& o : committed->cases) {
      if (o.kernel == c.kernel && o.compiler == c.compiler) old = &o;
    }
    if (old == nullptr) {
      ADD_FAILURE() << c.kernel << "/" << c.compiler << " is not exported: run `qgpu gpu export`";
      continue;
    }
    EXPECT_EQ(old->digest, c.digest) << c.kernel << "/" << c.compiler
                                     << ": the host's PTX changed since export: run `qgpu gpu "
                                        "export`, then ci/gpu-record.sh on a GPU machine";
    EXPECT_EQ(old->launch.params, c.launch.params) << c.kernel << "/" << c.compiler;
    EXPECT_EQ(old->launch.global, c.launch.global) << c.kernel << "/" << c.compiler;
    EXPECT_EQ(old->launch.dynamicSharedBytes, c.launch.dynamicSharedBytes) << c.kernel << "/" << c.compiler;
  }
  EXPECT_EQ(committed->cases.size(), now->cases.size()) << "exported cases that no longer exist";
}

}  // namespace
}  // namespace qgpu::gpu
