// qgpu/host/lower/tests/dialect_cuda_test.cpp — every function and name the clang dialect header
// (kernels/qgpu_cuda.h) and clang's cooperative_groups.h and cooperative_groups/reduce.h declare
// (vector types and make_* included), compiled by clang-14 and nvcc from one source and lowered;
// coalesced groups under both (nvcc's shuffles by rank refused: fns); a tile wider than the warp refused by clang with the 32-lane
// message; 32-lane masks and widths flagged in LowerStats::assumes32Lanes (label tools).
#include <gtest/gtest.h>

#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"

namespace qgpu::lower {
namespace {

// One call of each declared builtin (both overloads where CUDA has two), stored so none is dead;
// in four kernels, and all of them in one (EveryDeclaredBuiltinInOneKernelLowers).
std::string everyBuiltin(const std::string& calls) {
  return "#include <cstdint>\n#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
         "__global__ void __launch_bounds__(16) every(int* o, unsigned* u, int x = 1) {\n"
         "  unsigned t = threadIdx.x + blockIdx.x * blockDim.x + gridDim.x + threadIdx.y + blockIdx.z;\n"
         "  int i = (int)t - x;\n  uint32_t k = 0; int32_t s = 0; uint q = 0;\n" + calls +
         "  o[2 + t] = s;\n  u[2 + t] = k + q;\n}\n";
}

struct Calls {
  const char* name;
  const char* code;
};

const Calls kCalls[] = {
    {"barriers_atomics",
     "  __syncthreads();\n"
     "  s += __syncthreads_count(i > 0) + __syncthreads_and(i > 0) + __syncthreads_or(i > 0);\n"
     "  __syncwarp(0xf);\n"
     "  s += atomicAdd(o, i); k += atomicAdd(u, t); s += atomicSub(o, i); k += atomicSub(u, t);\n"
     "  s += atomicExch(o + 1, i); k += atomicExch(u + 1, t); s += atomicMin(o, i); k += atomicMin(u, t);\n"
     "  s += atomicMax(o, i); k += atomicMax(u, t); k += atomicInc(u, 9u); k += atomicDec(u, 9u);\n"
     "  s += atomicCAS(o, 0, i); k += atomicCAS(u, 0u, t); s += atomicAnd(o, i); k += atomicAnd(u, t);\n"
     "  s += atomicOr(o, i); k += atomicOr(u, t); s += atomicXor(o, i); k += atomicXor(u, t);\n"
     ""},
    {"warp",
     "  s += __shfl_sync(0xf, i, 1, 4); k += __shfl_sync(0xf, t, 1, 4);\n"
     "  s += __shfl_up_sync(0xf, i, 1, 4); k += __shfl_up_sync(0xf, t, 1, 4);\n"
     "  s += __shfl_down_sync(0xf, i, 1, 4); k += __shfl_down_sync(0xf, t, 1, 4);\n"
     "  s += __shfl_xor_sync(0xf, i, 1, 4); k += __shfl_xor_sync(0xf, t, 1, 4);\n"
     "  k += __ballot_sync(0xf, i > 0); s += __any_sync(0xf, i > 0) + __all_sync(0xf, i > 0);\n"
     "  k += __activemask();\n"
     ""},
    {"arith",
     "  s += __popc(t) + __clz(i) + __ffs(i); k += __brev(t) + __byte_perm(t, k, 0x3210);\n"
     "  s += min(i, 3) + max(i, 3) + abs(i); k += min(t, 3u) + max(t, 3u) + umin(t, 2u) + umax(t, 2u);\n"
     "  k += min(i, 3u) + max(3u, i);\n"
     "  k += __umulhi(t, 7u) + __umul24(t, 5u) + __usad(t, 2u, 1u) + __sad(i, 2, 1u);\n"
     "  s += __mulhi(i, 7) + __mul24(i, 5);\n"
     ""},
    {"fences_groups",
     "  __threadfence_block(); __threadfence(); __threadfence_system();\n"
     "  q = warpSize + (NULL == 0);\n"
     "  cg::thread_block b = cg::this_thread_block();\n"
     "  b.sync(); cg::sync(b);\n"
     "  q += b.thread_rank() + b.size() + b.num_threads() + b.group_index().x + b.thread_index().x;\n"
     "  cg::thread_block_tile<4> tile = cg::tiled_partition<4>(b);\n"
     "  tile.sync();\n"
     "  q += tile.thread_rank() + tile.size() + tile.num_threads() + tile.meta_group_rank() +\n"
     "       tile.meta_group_size();\n"
     "  s += tile.shfl(i, 0) + tile.shfl_up(i, 1) + tile.shfl_down(i, 1) + tile.shfl_xor(i, 1);\n"
     "  s += tile.any(i > 0) + tile.all(i > 0);\n"
     "  k += tile.ballot(i > 0);\n"
     ""},
    {"wide64",
     "  unsigned long long* w = (unsigned long long*)(u + 8);\n"
     "  unsigned long long v = t;\n"
     "  v += atomicAdd(w, v) + atomicExch(w + 1, v) + atomicAnd(w, v) + atomicOr(w, v) + atomicXor(w, v);\n"
     "  v += __umul64hi(v, 7ull) + (unsigned long long)__mul64hi((long long)v, -7ll);\n"
     "  k += (unsigned)v + (unsigned)(v >> 32);\n"
     ""},
    {"vector_types",
     "  int2 a2 = make_int2(i, 2); int4 a4 = make_int4(i, 1, 2, 3);\n"
     "  uint2 b2 = make_uint2(t, 2u); uint4 b4 = make_uint4(t, 1u, 2u, 3u);\n"
     "  char2 c2 = make_char2(1, 2); char4 c4 = make_char4(1, 2, 3, 4);\n"
     "  uchar2 d2 = make_uchar2(1, 2); uchar4 d4 = make_uchar4(1, 2, 3, (unsigned char)t);\n"
     "  short2 e2 = make_short2(1, (short)i); short4 e4 = make_short4(1, 2, 3, 4);\n"
     "  ushort2 f2 = make_ushort2(1, 2); ushort4 f4 = make_ushort4(1, 2, 3, (unsigned short)t);\n"
     "  s += a2.x + a2.y + a4.x + a4.w + c2.y + c4.w + e2.y + e4.z;\n"
     "  k += b2.y + b4.x + b4.w + d2.x + d4.w + f2.y + f4.w;\n"
     ""},
};

// cg::coalesced_threads() and its members. clang's group (kernels/include) shuffles at width 4;
// the toolkit's (nvcc) at width 32, which is flagged, and its shfl by a non-constant rank and
// shfl_up/down use __fns (fns.b32), which the front end refuses.
const char* kCoalesced =
    "  cg::coalesced_group g = cg::coalesced_threads();\n"
    "  g.sync(); cg::sync(g);\n"
    "  q += g.size() + g.num_threads() + g.thread_rank() + g.meta_group_rank() + g.meta_group_size();\n"
    "  s += g.shfl(i, 0) + g.any(i > 0) + g.all(i > 0);\n";
// Members that nvcc's toolkit header cannot bring to this machine: shuffles by a rank use __fns
// (refused), and ballot's 32-step bit-packing loop, unrolled, takes more than the 32 blocks.
const char* kCoalescedRanks =
    "  s += g.shfl(i, x) + g.shfl_up(i, 1) + g.shfl_down(i, 1);\n"
    "  k += g.ballot(i > 0);\n";

class Dialect : public ::testing::TestWithParam<host::Compiler> {
 protected:
  void SetUp() override {
    if (!host::toolAvailable(GetParam())) GTEST_SKIP() << host::compilerName(GetParam()) << " is not installed";
  }
  Expected<machine::Program> build(const std::string& source, LowerStats* stats,
                                   std::vector<uint32_t> params = {0, 80, 1}) {
    host::CompileOptions options;
    options.fileName = "every.cu";
    QGPU_TRY(ptxText, host::compileToPtx(source, GetParam(), options));
    QGPU_TRY(module, ptx::parse(ptxText, "every.ptx"));
    LowerOptions lo;
    lo.params = std::move(params);
    return lower(module, lo, stats);
  }
};

TEST_P(Dialect, EveryDeclaredBuiltinCompilesAndLowers) {
  for (const Calls& calls : kCalls) {
    LowerStats stats;
    auto program = build(everyBuiltin(calls.code), &stats);
    ASSERT_TRUE(program.ok()) << calls.name << ": " << program.error().str();
    EXPECT_TRUE(stats.assumes32Lanes.empty()) << calls.name << ": " << stats.assumes32Lanes.front();
  }
}

TEST_P(Dialect, EveryDeclaredBuiltinInOneKernelLowers) {
  // All four groups at once: this used to fail with Internal "block splitting did not converge"
  // (regalloc.cpp finalize/splitBlocks; the regression test without a compiler is lower_test's
  // LowerLimits.EveryBuiltinAtOnceShrinksToAFitOrAnOverLimitNeverInternal, on this kernel's
  // committed PTX).
  // (The vector types and the 64-bit group, added later, are left out: with the vector types
  // nvcc's kernel needs 34 blocks. Trace v5 counts records, an atomic with a register
  // destination two: with every group below the kernel needs 33 (clang) / 35 (nvcc) blocks, so
  // the fences and groups are left out too, keeping the atomics.)
  std::string all;
  for (const Calls& calls : kCalls)
    if (std::string(calls.name) != "vector_types" && std::string(calls.name) != "wide64" &&
        std::string(calls.name) != "fences_groups")
      all += calls.code;
  LowerStats stats;
  auto program = build(everyBuiltin(all), &stats);
  ASSERT_TRUE(program.ok()) << program.error().str();
}

TEST_P(Dialect, ThirtyTwoLaneShufflesAreFlagged) {
  // The default width (32) and a full mask: fine on a GPU, different code on 4-lane warps.
  LowerStats stats;
  auto program = build("__global__ void k(int* o) { o[threadIdx.x] = __shfl_down_sync(0xffffffff, "
                       "(int)threadIdx.x, 1); }\n", &stats, {0});
  ASSERT_TRUE(program.ok()) << program.error().str();
  ASSERT_FALSE(stats.assumes32Lanes.empty());
  EXPECT_NE(stats.assumes32Lanes[0].find("shuffle segment width 32"), std::string::npos)
      << stats.assumes32Lanes[0];
}

TEST_P(Dialect, CoalescedThreadsLowerUnderBothCompilers) {
  LowerStats stats;
  auto program = build(everyBuiltin(kCoalesced), &stats);
  ASSERT_TRUE(program.ok()) << program.error().str();
  if (GetParam() == host::Compiler::Clang) {
    EXPECT_TRUE(stats.assumes32Lanes.empty()) << stats.assumes32Lanes.front();
  } else {
    ASSERT_FALSE(stats.assumes32Lanes.empty());  // the toolkit's shfl(v, 0) passes width 32
    EXPECT_NE(stats.assumes32Lanes[0].find("shuffle segment width 32"), std::string::npos)
        << stats.assumes32Lanes[0];
  }
}

TEST_P(Dialect, CoalescedShufflesByRankLowerUnderClangAndAreRefusedUnderNvcc) {
  LowerStats stats;
  auto program = build(everyBuiltin(std::string(kCoalesced) + kCoalescedRanks), &stats);
  if (GetParam() == host::Compiler::Clang) {
    ASSERT_TRUE(program.ok()) << program.error().str();
    EXPECT_TRUE(stats.assumes32Lanes.empty()) << stats.assumes32Lanes.front();
    return;
  }
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error().kind, ErrorKind::PtxUnsupported) << program.error().str();
  EXPECT_NE(program.error().message.find("fns"), std::string::npos) << program.error().str();
}

// cg::reduce (<cooperative_groups/reduce.h>) on a tile and on a coalesced group, every op.
const char* kReduce =
    "  cg::thread_block_tile<4> r4 = cg::tiled_partition<4>(cg::this_thread_block());\n"
    "  s += cg::reduce(r4, i, cg::plus<int>()) + cg::reduce(r4, i, cg::less<int>()) +\n"
    "       cg::reduce(r4, i, cg::greater<int>());\n"
    "  k += cg::reduce(r4, t, cg::bit_and<unsigned>()) + cg::reduce(r4, t, cg::bit_or<unsigned>()) +\n"
    "       cg::reduce(r4, t, cg::bit_xor<unsigned>());\n"
    "  cg::coalesced_group g = cg::coalesced_threads();\n"
    "  s += cg::reduce(g, i, cg::plus<int>());\n";

TEST_P(Dialect, CgReduceLowersUnderBothCompilers) {
  // nvcc's <cooperative_groups/reduce.h> brings libcu++'s customisation-point objects as
  // module-level `.global` variables that the kernel never uses: they are parsed and inert.
  LowerStats stats;
  auto program = build("#include <cooperative_groups/reduce.h>\n" + everyBuiltin(kReduce), &stats);
  ASSERT_TRUE(program.ok()) << program.error().str();
  if (GetParam() == host::Compiler::Clang) {
    EXPECT_TRUE(stats.assumes32Lanes.empty()) << stats.assumes32Lanes.front();
    return;
  }
  // nvcc's coalesced-group reduce shuffles with a 32-lane segment and a full 32-lane member mask:
  // flagged, so that the GPU comparison is inconclusive.
  EXPECT_FALSE(stats.assumes32Lanes.empty());
  for (const std::string& finding : stats.assumes32Lanes)
    EXPECT_TRUE(finding.find("shuffle segment width 32") != std::string::npos ||
                finding.find("member mask 0xffffffff names lanes above 3") != std::string::npos)
        << finding;
}

INSTANTIATE_TEST_SUITE_P(Compilers, Dialect, ::testing::Values(host::Compiler::Clang, host::Compiler::Nvcc),
                         [](const auto& info) { return std::string(host::compilerName(info.param)); });

TEST(DialectClang, TileWiderThanTheWarpIsRefusedAsAssuming32Lanes) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto ptx = host::compileToPtx("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
                                "__global__ void k(int* o) {\n"
                                "  auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
                                "  o[0] = t.shfl_down(1, 1);\n}\n",
                                host::Compiler::Clang);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.error().kind, ErrorKind::CompileFailed);
  EXPECT_NE(ptx.error().message.find("the kernel assumes 32-lane warps"), std::string::npos)
      << ptx.error().str();
}

}  // namespace
}  // namespace qgpu::lower
