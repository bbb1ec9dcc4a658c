// qgpu/kernels/tests/compile_test.cpp — every catalog kernel compiles with clang-14 AND nvcc, and
// both PTX files pass ptxas for sm_75 and sm_90 (label tools; skipped with the reason when a tool
// is missing). Two worker threads keep it to well under a minute on two cores.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "host/cuda/compile.h"
#include "kernels/catalog.h"

namespace qgpu::kernels {
namespace {

using host::Compiler;

// The kernel's entry, plain or with its C++ mangled name (_Z<len><name>...).
bool hasEntry(const std::string& ptx, const std::string& name) {
  return ptx.find(".entry " + name + "(") != std::string::npos ||
         ptx.find(".entry _Z" + std::to_string(name.size()) + name) != std::string::npos;
}

void compileAll(Compiler compiler) {
  auto tool = host::toolPath(compiler);
  if (!tool) GTEST_SKIP() << "tool missing: " << tool.error().message;
  if (!host::ptxasAvailable()) GTEST_SKIP() << "tool missing: " << host::ptxasPath().error().message;
  auto catalog = loadCatalog(defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (size_t i = next++; i < catalog->size(); i = next++) {
      const KernelSpec& spec = (*catalog)[i];
      host::CompileOptions options;
      options.fileName = spec.name + ".cu";
      std::string failure;
      auto ptx = host::compileToPtx(spec.source, compiler, options);
      if (!ptx) {
        failure = ptx.error().str();
      } else if (!hasEntry(*ptx, spec.name)) {
        failure = spec.name + ": PTX has no .entry for " + spec.name;
      } else {
        for (const char* arch : {"sm_75", "sm_90"}) {
          if (Status status = host::ptxasCheck(*ptx, arch); !status) {
            failure = spec.name + " (" + arch + "): " + status.error().str();
            break;
          }
        }
      }
      if (!failure.empty()) {
        std::lock_guard lock(mutex);
        failures.push_back(failure);
      }
    }
  };
  std::thread second(worker);
  worker();
  second.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " kernels failed with "
                                << host::compilerName(compiler) << "; first:\n"
                                << (failures.empty() ? "" : failures[0]);
}

TEST(CatalogCompile, EveryKernelCompilesWithClangAndPassesPtxas) { compileAll(Compiler::Clang); }
TEST(CatalogCompile, EveryKernelCompilesWithNvccAndPassesPtxas) { compileAll(Compiler::Nvcc); }

}  // namespace
}  // namespace qgpu::kernels
