// qgpu/host/lower/tests/vector_cuda_test.cpp — CUDA's vector types and 8/16-bit value parameters
// through clang-14 and nvcc (label tools; a missing compiler skips its cases with the reason):
//   * an int4 load / int2 store whose address is not a multiple of the vector's size faults, as
//     a GPU faults with "misaligned address" (docs/lowering.md, "Memory"); its aligned twin runs;
//   * `char`, `short`, `bool`, `unsigned char` parameters by value (ld.param.s8/u8/s16 of the
//     parameter's own width) read back with their sign or zero extension.
// Expected words are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

struct Result {
  oracle::RunStatus status = oracle::RunStatus::Finished;
  std::array<uint32_t, machine::kGlobalWords> global{};
  std::string fault;
};

class VectorCuda : public testing::TestWithParam<host::Compiler> {
 protected:
  void SetUp() override {
    if (!host::toolAvailable(GetParam())) GTEST_SKIP() << host::compilerName(GetParam()) << " is not installed";
  }
  // Compiles `src`, lowers it with `params`, runs 4 threads on `global`.
  Result run(const std::string& src, std::vector<uint32_t> params, const std::vector<uint32_t>& global) {
    Result r;
    auto ptxText = host::compileToPtx(src, GetParam());
    EXPECT_TRUE(ptxText.ok()) << ptxText.error().str();
    if (!ptxText.ok()) return r;
    auto module = ptx::parse(*ptxText, "k.ptx");
    EXPECT_TRUE(module.ok()) << module.error().str();
    if (!module.ok()) return r;
    LowerOptions opt;
    opt.params = std::move(params);
    auto program = lower(*module, opt);
    EXPECT_TRUE(program.ok()) << program.error().str() << "\n" << *ptxText;
    if (!program.ok()) return r;
    machine::Launch launch;
    launch.blockX = 4;
    for (size_t w = 0; w < global.size(); ++w) launch.global[w] = global[w];
    auto res = oracle::run(*program, launch, oracle::RunOptions{100'000, false});
    EXPECT_TRUE(res.ok()) << res.error().str();
    if (!res.ok()) return r;
    r.status = res->status;
    r.global = res->global;
    r.fault = res->fault.message;
    return r;
  }
};

// a: 32 words at byte 0 (a[k] = k), out: 16 words at byte 128. Thread t loads the int4 at
// a + off + 4t and writes x + y + z + w to out[t] (every component used, so both compilers emit
// one ld.global.v4.u32; with only x and w used clang loads the two words alone, and then no GPU
// faults either).
const std::string kInt4Load =
    "__global__ void k(const int* a, int* out, int off) {\n"
    "  const int4* p = reinterpret_cast<const int4*>(a + off);\n"
    "  int4 v = p[threadIdx.x];\n"
    "  out[threadIdx.x] = v.x + v.y + v.z + v.w;\n"
    "}\n";

std::vector<uint32_t> ramp() {
  std::vector<uint32_t> g(32);
  for (uint32_t k = 0; k < 32; ++k) g[k] = k;
  return g;
}

TEST_P(VectorCuda, MisalignedInt4LoadFaultsAndTheAlignedOneLoads) {
  // off = 1, 2, 3 words: 4-byte aligned elements, but the int4 is not 16-byte aligned.
  for (uint32_t off : {1u, 2u, 3u}) {
    Result r = run(kInt4Load, {0, 128, off}, ramp());
    EXPECT_EQ(r.status, oracle::RunStatus::Fault) << "off " << off;
    for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[32 + t], 0u) << "off " << off;
  }
  // off = 4: thread t reads words 4 + 4t .. 7 + 4t, whose sum is 22 + 16t.
  Result r = run(kInt4Load, {0, 128, 4}, ramp());
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(r.global[32 + t], 22 + 16 * t) << "t " << t;
}

TEST_P(VectorCuda, MisalignedInt2StoreFaultsAndTheAlignedOneStores) {
  const std::string src =
      "__global__ void k(int* out, int off) {\n"
      "  int t = threadIdx.x;\n"
      "  reinterpret_cast<int2*>(out + off)[t] = make_int2(t + 1, 10 * t);\n"
      "}\n";
  Result bad = run(src, {0, 1}, {});  // out + 1 word: 4 bytes, not a multiple of 8
  EXPECT_EQ(bad.status, oracle::RunStatus::Fault);
  for (uint32_t w = 0; w < 10; ++w) EXPECT_EQ(bad.global[w], 0u) << "word " << w;
  // off = 2: thread t writes words 2 + 2t (t + 1) and 3 + 2t (10t).
  Result good = run(src, {0, 2}, {});
  ASSERT_EQ(good.status, oracle::RunStatus::Finished) << good.fault;
  const uint32_t want[10] = {0, 0, 1, 0, 2, 10, 3, 20, 4, 30};
  for (uint32_t w = 0; w < 10; ++w) EXPECT_EQ(good.global[w], want[w]) << "word " << w;
}

TEST_P(VectorCuda, SubwordValueParametersKeepTheirSignOrZeroExtension) {
  const std::string src =
      "__global__ void k(int* out, char c, short s, bool b, unsigned char u, unsigned short h) {\n"
      "  if (threadIdx.x == 0) {\n"
      "    out[0] = c; out[1] = s; out[2] = b ? 7 : 9; out[3] = u; out[4] = h; out[5] = c * s;\n"
      "  }\n"
      "}\n";
  // The kernel file's words: c = -3, s = -300, b = 1, u = 200, h = 65000 (sign-extended words for
  // the signed ones, as kernels/catalog.cpp range-checks them).
  Result r = run(src, {0, 0xfffffffdu, 0xfffffed4u, 1, 200, 65000}, {});
  ASSERT_EQ(r.status, oracle::RunStatus::Finished) << r.fault;
  EXPECT_EQ(static_cast<int32_t>(r.global[0]), -3);
  EXPECT_EQ(static_cast<int32_t>(r.global[1]), -300);
  EXPECT_EQ(r.global[2], 7u);
  EXPECT_EQ(r.global[3], 200u);
  EXPECT_EQ(r.global[4], 65000u);
  EXPECT_EQ(r.global[5], 900u);
  // Twin: positive c and s, b = 0.
  Result q = run(src, {0, 5, 300, 0, 0, 1}, {});
  ASSERT_EQ(q.status, oracle::RunStatus::Finished) << q.fault;
  EXPECT_EQ(q.global[0], 5u);
  EXPECT_EQ(q.global[1], 300u);
  EXPECT_EQ(q.global[2], 9u);
  EXPECT_EQ(q.global[3], 0u);
  EXPECT_EQ(q.global[4], 1u);
  EXPECT_EQ(q.global[5], 1500u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, VectorCuda, ::testing::Values(host::Compiler::Clang, host::Compiler::Nvcc),
                         [](const auto& info) { return std::string(host::compilerName(info.param)); });

}  // namespace
}  // namespace qgpu::lower
