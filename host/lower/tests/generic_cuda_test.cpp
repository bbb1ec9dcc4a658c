// qgpu/host/lower/tests/generic_cuda_test.cpp — generic pointers to __shared__ memory in CUDA
// compiled by clang-14 and nvcc (label tools; a missing compiler skips its cases with the reason):
// a __noinline__ device helper taking `unsigned*` is called with a shared element, a global one
// and a pointer that is shared in even threads and global in odd ones (docs/lowering.md, "Generic
// addresses"). The PTX is lowered and run by the interpreter and also run by ptxeval; both must
// give the memory worked out by hand below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"
#include "ptxeval/eval.h"

namespace qgpu::lower {
namespace {

// g (4 words) at byte 0 = 10 20 30 40, out (16 words) at byte 16, 4 threads.
constexpr const char* kSource = R"(
__device__ __noinline__ unsigned addTo(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}
__global__ void k(unsigned* g, unsigned* out) {
  __shared__ unsigned sh[4];
  unsigned t = threadIdx.x;
  sh[t] = 100 + t;
  __syncthreads();
  unsigned a = addTo(&sh[t], 5);
  unsigned b = addTo(&g[t], 7);
  unsigned* p = (t & 1) ? &g[t] : &sh[t];
  unsigned c = addTo(p, 1000);
  __syncthreads();
  out[t] = a;
  out[4 + t] = b;
  out[8 + t] = c;
  out[12 + t] = sh[t];
}
)";

// By hand, thread t: a = 100 + t (sh[t] becomes 105 + t); b = g[t] (g[t] becomes g[t] + 7);
// c = even t: sh[t] = 105 + t (sh[t] becomes 1105 + t), odd t: g[t] + 7 (g[t] becomes g[t] + 1007).
const std::vector<uint32_t> kExpect = {
    17, 1027, 37, 1047,        // g
    100, 101, 102, 103,        // out[0..3]   a
    10, 20, 30, 40,            // out[4..7]   b
    105, 27, 107, 47,          // out[8..11]  c
    1105, 106, 1107, 108};     // out[12..15] sh

class GenericCuda : public testing::TestWithParam<host::Compiler> {
 protected:
  void SetUp() override {
    if (!host::toolAvailable(GetParam())) GTEST_SKIP() << host::compilerName(GetParam()) << " is not installed";
  }
};

TEST_P(GenericCuda, HelperThroughSharedGlobalAndMixedPointersMatchesTheHandResult) {
  auto ptxText = host::compileToPtx(kSource, GetParam());
  ASSERT_TRUE(ptxText.ok()) << ptxText.error().str();
  auto module = ptx::parse(*ptxText, "generic.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  // The compiler kept the generic accesses (otherwise this tests nothing new).
  EXPECT_NE(ptxText->find("cvta.shared"), std::string::npos) << *ptxText;
  LowerOptions opt;
  opt.params = {0, 16};
  auto program = lower(*module, opt);
  ASSERT_TRUE(program.ok()) << program.error().str() << "\n" << *ptxText;
  machine::Launch launch;
  launch.blockX = 4;
  ptxeval::Launch pl;
  pl.blockX = 4;
  pl.params = {0, 16};
  for (uint32_t w = 0; w < 4; ++w) launch.global[w] = pl.global[w] = 10 * (w + 1);
  auto m = oracle::run(*program, launch, oracle::RunOptions{100'000, false});
  ASSERT_TRUE(m.ok()) << m.error().str();
  ASSERT_EQ(m->status, oracle::RunStatus::Finished) << m->fault.str() << "\n" << *ptxText << "\n" << machine::print(*program);
  auto p = ptxeval::evaluate(*module, pl);
  ASSERT_TRUE(p.ok()) << p.error().str();
  ASSERT_EQ(p->status, ptxeval::EvalStatus::Finished) << p->fault.str();
  for (size_t i = 0; i < machine::kGlobalWords; ++i) {
    const uint32_t want = i < kExpect.size() ? kExpect[i] : 0;
    EXPECT_EQ(m->global[i], want) << "interpreter, word " << i << "\n" << machine::print(*program);
    EXPECT_EQ(p->global[i], want) << "ptxeval, word " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Compilers, GenericCuda, testing::Values(host::Compiler::Clang, host::Compiler::Nvcc),
                         [](const testing::TestParamInfo<host::Compiler>& i) {
                           return std::string(host::compilerName(i.param));
                         });

}  // namespace
}  // namespace qgpu::lower
