// qgpu/kernels/tests/reference_test.cpp — every catalog kernel's `expect:` lines equal what its
// plain C++ reference computes (label cpu). The references are independent of every qgpu leg.
#include "kernels/reference/reference.h"

#include <gtest/gtest.h>

#include <set>

#include "kernels/catalog.h"

namespace qgpu::kernels {
namespace {

const std::vector<KernelSpec>& catalog() {
  static const std::vector<KernelSpec> specs = [] {
    auto loaded = loadCatalog(defaultCatalogDir());
    EXPECT_TRUE(loaded.ok()) << loaded.error().str();
    return loaded.ok() ? *loaded : std::vector<KernelSpec>{};
  }();
  return specs;
}

TEST(KernelReference, EveryKernelHasAReference) {
  ASSERT_FALSE(catalog().empty());
  for (const KernelSpec& spec : catalog()) {
    EXPECT_TRUE(referenceTable().count(spec.name)) << spec.name << " has no reference";
  }
}

TEST(KernelReference, EveryReferenceHasAKernel) {
  std::set<std::string> names;
  for (const KernelSpec& spec : catalog()) names.insert(spec.name);
  for (const auto& [name, fn] : referenceTable()) {
    EXPECT_TRUE(names.count(name)) << "reference '" << name << "' has no catalog kernel";
  }
}

TEST(KernelReference, ExpectLinesEqualTheReference) {
  ASSERT_FALSE(catalog().empty());
  for (const KernelSpec& spec : catalog()) {
    auto finals = runReference(spec);
    ASSERT_TRUE(finals.ok()) << finals.error().str();
    for (size_t i = 0; i < spec.params.size(); ++i) {
      const ParamSpec& p = spec.params[i];
      if (!p.isOutput()) continue;
      EXPECT_EQ(formatValues(p.expect, p.type), formatValues((*finals)[i], p.type))
          << spec.path << ": expect for '" << p.name << "' differs from the reference "
          << "(regenerate with qgpu_kernel_expect --write after reviewing the reference)";
    }
  }
}

// The failing twin: a wrong expect line is caught by the same comparison.
TEST(KernelReference, WrongExpectLineIsCaught) {
  auto spec = parseKernelText(R"(// qgpu-kernel: dot
// summary: s
// launch: grid=1 block=4
// param: u in i32[3] = 1 2 3
// param: v in i32[3] = 4 5 6
// param: out out i32[1]
// param: n scalar i32 = 3
// expect: out = 33
__global__ void dot(const int* u, const int* v, int* out, int n) {}
)",
                              "dot.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto finals = runReference(*spec);
  ASSERT_TRUE(finals.ok());
  EXPECT_EQ((*finals)[2], std::vector<uint32_t>{32});
  EXPECT_NE((*finals)[2], spec->params[2].expect);
}

TEST(KernelReference, KernelWithoutReferenceIsAnInternalError) {
  auto spec = parseKernelText(R"(// qgpu-kernel: no_such_kernel
// summary: s
// launch: grid=1 block=1
// param: out out i32[1]
// expect: out = 0
__global__ void no_such_kernel(int* out) {}
)",
                              "no_such_kernel.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto finals = runReference(*spec);
  ASSERT_FALSE(finals.ok());
  EXPECT_EQ(finals.error().kind, ErrorKind::Internal);
}

TEST(KernelReference, ReferenceFollowsProgrammaticInputs) {
  auto spec = parseKernelFile(defaultCatalogDir() + "/dot.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  ASSERT_TRUE(setInput(*spec, "u", {1, 1, 1, 1, 1}).ok());
  ASSERT_TRUE(setInput(*spec, "v", {1, 2, 3, 4, 5}).ok());
  ASSERT_TRUE(setInput(*spec, "n", {5}).ok());
  ASSERT_TRUE(fillExpectations(*spec).ok());
  EXPECT_EQ(spec->find("out")->expect, std::vector<uint32_t>{15});
}

}  // namespace
}  // namespace qgpu::kernels
