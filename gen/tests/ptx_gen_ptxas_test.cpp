// ptxas accepts what the random PTX generator writes: 150 seeds x both dialects through
// `ptxas -arch=sm_90` (label `tools`; skipped, exit 77, where ptxas is missing).
#include <gtest/gtest.h>

#include "gen/ptx_gen.h"
#include "host/cuda/compile.h"

namespace qgpu::gen {
namespace {

TEST(PtxGenPtxas, EveryGeneratedCaseAssembles) {
  if (!host::ptxasAvailable()) GTEST_SKIP() << "ptxas is not installed";
  int assembled = 0;
  for (PtxDialect d : {PtxDialect::Clang, PtxDialect::Nvcc})
    for (uint64_t s = 1; s <= 150; ++s) {
      auto c = generatePtx(PtxPolicy{}, s, d);
      ASSERT_TRUE(c.ok()) << c.error().str();
      Status st = host::ptxasCheck(c->ptx, "sm_90");
      ASSERT_TRUE(st.ok()) << c->header << "\n" << st.error().str() << "\n" << c->ptx;
      ++assembled;
    }
  std::printf("%d random PTX cases assembled by ptxas -arch=sm_90\n", assembled);
}

}  // namespace
}  // namespace qgpu::gen
