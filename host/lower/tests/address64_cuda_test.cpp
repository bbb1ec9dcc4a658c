// qgpu/host/lower/tests/address64_cuda_test.cpp — sound 64-bit addresses on CUDA kernels compiled by
// clang-14 and nvcc (label tools; a missing compiler skips its cases with the reason). The rule
// (docs/lowering.md, "Sound narrowing"): the exact 64-bit address is formed and the access
// happens only inside the machine's memory [0, 504), else the run faults -- as a GPU faults, or
// writes the same word relative to the arrays. Each data-dependent large, negative or wrapping
// index has an in-range twin; expected memory is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

// a (4 words) at byte 0, out (8 words) at byte 16; every kernel is k(const int* a, int* out).
struct Case {
  const char* name;
  const char* body;  // the kernel body
};
// The kernel: unsigned + int is unsigned, zero-extended to 64 bits.
constexpr Case kLarge{"large", "long long i = threadIdx.x + a[0]; out[i] = threadIdx.x + 100;"};
// A signed index: a[0] < 0 reaches below out.
constexpr Case kSigned{"signed", "long long i = (long long)threadIdx.x + a[0]; out[i] = threadIdx.x + 100;"};
// A 64-bit index 4·a[0]² + t: for a[0] = 2^30 its byte offset wraps modulo 2^64.
constexpr Case kWrap{"wrap", "long long i = (long long)a[0] * a[0] * 4 + threadIdx.x; out[i] = threadIdx.x + 100;"};
// A data-dependent large offset in a load.
constexpr Case kLoad{"load", "long long i = threadIdx.x + (unsigned)a[0]; out[threadIdx.x] = a[i];"};

class Address64Cuda : public testing::TestWithParam<host::Compiler> {
 protected:
  struct Result {
    oracle::RunStatus status = oracle::RunStatus::Finished;
    std::array<uint32_t, machine::kGlobalWords> global{};
    std::string fault;
  };
  Result run(const Case& c, int64_t x) {
    Result r;
    std::string src = std::string("__global__ void k(const int* a, int* out) { ") + c.body + " }\n";
    auto ptxText = host::compileToPtx(src, GetParam());
    EXPECT_TRUE(ptxText.ok()) << ptxText.error().str();
    if (!ptxText.ok()) return r;
    auto module = ptx::parse(*ptxText, c.name);
    EXPECT_TRUE(module.ok()) << module.error().str();
    if (!module.ok()) return r;
    LowerOptions opt;
    opt.params = {0, 16};
    auto program = lower(*module, opt);
    EXPECT_TRUE(program.ok()) << program.error().str() << "\n" << *ptxText;
    if (!program.ok()) return r;
    machine::Launch launch;
    launch.blockX = 4;
    launch.global[0] = static_cast<uint32_t>(x);
    for (uint32_t w = 1; w < 4; ++w) launch.global[w] = 40 + w;
    auto res = oracle::run(*program, launch, oracle::RunOptions{100'000, false});
    EXPECT_TRUE(res.ok()) << res.error().str();
    if (!res.ok()) return r;
    r.status = res->status;
    r.global = res->global;
    r.fault = res->fault.message;
    return r;
  }
  void SetUp() override {
    if (!host::toolAvailable(GetParam())) GTEST_SKIP() << host::compilerName(GetParam()) << " is not installed";
  }
};

TEST_P(Address64Cuda, LargeDataDependentIndexFaults) {
  // a[0] = 2^30: byte offset 2^32 + 4t, above memory (truncated: out[t], the old wrong match).
  EXPECT_EQ(run(kLarge, int64_t{1} << 30).status, oracle::RunStatus::Fault);
  // Twin: a[0] = 1 writes out[1 + t] = t + 100.
  auto r = run(kLarge, 1);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[5 + t], 100 + t);
}

TEST_P(Address64Cuda, NegativeIndex) {
  // a[0] = -1: out[-1 + t]; out[-1] is a[3] (byte 12), inside memory: the word a GPU with this
  // layout writes.
  auto r = run(kSigned, -1);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[3 + t], 100 + t);
  // a[0] = -5: thread 0 stores at 16 - 20 = -4, below memory.
  EXPECT_EQ(run(kSigned, -5).status, oracle::RunStatus::Fault);
  // a[0] = -2^30: byte offset -2^32 + 4t: far below memory (truncated: out[t]).
  EXPECT_EQ(run(kSigned, -(int64_t{1} << 30)).status, oracle::RunStatus::Fault);
}

TEST_P(Address64Cuda, WrapAroundModTwoToThe64) {
  // a[0] = 2^30: i = 4·2^60 + t = 2^62 + t, byte offset 2^64 + 4t = 4t (mod 2^64): out[t], as on
  // a GPU.
  auto r = run(kWrap, int64_t{1} << 30);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 100 + t);
  // a[0] = 2^29: offset 2^62 + 4t; a[0] = 2^16: 2^36 + 4t. Both fault (truncated: out[t]).
  EXPECT_EQ(run(kWrap, int64_t{1} << 29).status, oracle::RunStatus::Fault);
  EXPECT_EQ(run(kWrap, int64_t{1} << 16).status, oracle::RunStatus::Fault);
}

TEST_P(Address64Cuda, LargeOffsetInALoadFaults) {
  EXPECT_EQ(run(kLoad, int64_t{1} << 30).status, oracle::RunStatus::Fault);
  // Twin: a[0] = 0 copies a[t] into out[t] (a[0] = 0, a[1..3] = 41..43).
  auto r = run(kLoad, 0);
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  EXPECT_EQ(r.global[4], 0u);
  for (uint32_t t = 1; t < 4; ++t) EXPECT_EQ(r.global[4 + t], 40 + t);
}

INSTANTIATE_TEST_SUITE_P(Compilers, Address64Cuda, testing::Values(host::Compiler::Clang, host::Compiler::Nvcc),
                         [](const testing::TestParamInfo<host::Compiler>& p) {
                           return std::string(host::compilerName(p.param));
                         });

}  // namespace
}  // namespace qgpu::lower
