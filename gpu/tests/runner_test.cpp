// qgpu/gpu/tests/runner_test.cpp — the runner without hardware: the no-driver paths, and a fake
// libcuda (tests/fake_cuda.cpp) for parameter passing, guards, run-twice and error reporting.
#include "gpu/runner.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace qgpu::gpu {
namespace {

// Mirrors the struct exported by fake_cuda.cpp.
struct FakeCudaStats {
  long allocs, frees, loads, unloads, launches, resets, retains, releases;
};

// Scopes QGPU_LIBCUDA / QGPU_FAKE_CUDA to one test.
class Env {
 public:
  Env(const char* lib, const char* mode) {
    setenv("QGPU_LIBCUDA", lib, 1);
    if (mode != nullptr) setenv("QGPU_FAKE_CUDA", mode, 1);
    else unsetenv("QGPU_FAKE_CUDA");
  }
  ~Env() {
    unsetenv("QGPU_LIBCUDA");
    unsetenv("QGPU_FAKE_CUDA");
  }
};

FakeCudaStats fakeStats() {
  // The runner loaded the same file, so dlopen returns the same handle and state.
  void* h = dlopen(QGPU_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr);
  auto fn = reinterpret_cast<FakeCudaStats (*)()>(dlsym(h, "fake_cuda_stats"));
  FakeCudaStats s = fn();
  dlclose(h);
  return s;
}

constexpr const char* kPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry store_scalar(.param .u64 store_scalar_param_0, .param .u32 store_scalar_param_1) { ret; }
.visible .entry write_before(.param .u64 a, .param .u32 b) { ret; }
.visible .entry write_at(.param .u64 a, .param .u32 b) { ret; }
.visible .entry nondet(.param .u64 a, .param .u32 b) { ret; }
.visible .entry store_shared(.param .u64 a, .param .u32 b) { ret; }
.visible .entry launch_fails(.param .u64 a, .param .u32 b) { ret; }
.visible .entry sync_fails(.param .u64 a, .param .u32 b) { ret; }
.visible .entry swap(.param .u64 a, .param .u32 b) { ret; }
.visible .entry not_in_driver(.param .u64 a, .param .u32 b) { ret; }
)";

GpuLaunch launch(const std::string& entry, uint32_t offset, uint32_t scalar) {
  GpuLaunch l;
  l.ptx = kPtx;
  l.entry = entry;
  l.gridX = 3;
  l.blockX = 5;
  for (uint32_t i = 0; i < 126; ++i) l.global.push_back(1000 + i);
  l.params = {offset, scalar};
  l.paramIsPointer = {true, false};
  return l;
}

Runner openFake(const char* mode = nullptr) {
  Env env(QGPU_FAKE_CUDA_PATH, mode);
  auto r = Runner::open();
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return std::move(r).value();
}

TEST(GpuRunner, ReportsNoDeviceWhenLibcudaIsMissing) {
  Env env("/nonexistent/libcuda.so.1", nullptr);
  auto r = Runner::open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::NoDevice);
  EXPECT_NE(r.error().message.find("/nonexistent/libcuda.so.1"), std::string::npos);
}

TEST(GpuRunner, ReportsNoDeviceForTheToolkitStubLibrary) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  Env env(stub, nullptr);
  auto r = Runner::open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::NoDevice) << r.error().str();
}

TEST(GpuRunner, ReportsNoDeviceWhenTheLibraryIsNotADriver) {
  Env env("libm.so.6", nullptr);
  auto r = Runner::open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::NoDevice);
  EXPECT_NE(r.error().message.find("lacks entry points: cuInit"), std::string::npos)
      << r.error().message;
}

TEST(GpuRunner, ReportsNoDeviceWhenTheDriverSeesNone) {
  {
    Env env(QGPU_FAKE_CUDA_PATH, "no-device");
    auto r = Runner::open();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::NoDevice);
    EXPECT_NE(r.error().message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
  }
  {
    Env env(QGPU_FAKE_CUDA_PATH, "zero-devices");
    auto r = Runner::open();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::NoDevice);
  }
}

TEST(GpuRunner, ReportsADriverFailureWithCallAndErrorName) {
  Env env(QGPU_FAKE_CUDA_PATH, "init-fails");
  auto r = Runner::open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Device);
  EXPECT_EQ(r.error().message, "cuInit failed: CUDA_ERROR_UNKNOWN");
}

TEST(GpuRunner, ReadsDeviceInfo) {
  Runner runner = openFake();
  EXPECT_EQ(runner.device().name, "Fake GPU");
  EXPECT_EQ(runner.device().ccMajor, 9);
  EXPECT_EQ(runner.device().ccMinor, 0);
  EXPECT_EQ(runner.device().driverVersion, 12040);
}

TEST(GpuRunner, PassesPointerAsImageAddressAndScalarAs32Bits) {
  Runner runner = openFake();
  auto r = runner.run(launch("store_scalar", 8, 0xABCD1234u));
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->global.size(), 126u);
  EXPECT_EQ(r->global[2], 0xABCD1234u);  // byte offset 8 = word 2
  EXPECT_EQ(r->global[3], 15u);          // grid 3 x block 5
  for (uint32_t i = 0; i < 126; ++i) {
    if (i != 2 && i != 3) {
      EXPECT_EQ(r->global[i], 1000 + i) << "word " << i;
    }
  }
  EXPECT_TRUE(r->guardsIntact);
  EXPECT_EQ(r->guardReport, "");
}

TEST(GpuRunner, RunsEveryKernelTwiceAndReleasesEverything) {
  Runner runner = openFake();
  FakeCudaStats before = fakeStats();
  ASSERT_TRUE(runner.run(launch("store_scalar", 0, 1)).ok());
  FakeCudaStats after = fakeStats();
  EXPECT_EQ(after.launches - before.launches, 2);
  EXPECT_EQ(after.allocs - before.allocs, after.frees - before.frees);
  EXPECT_EQ(after.loads - before.loads, after.unloads - before.unloads);
}

TEST(GpuRunner, ReportsANondeterministicResult) {
  Runner runner = openFake();
  auto r = runner.run(launch("nondet", 4, 0));
  ASSERT_TRUE(r.ok()) << r.error().str();  // a finding, carried as a field
  EXPECT_FALSE(r->deterministic);
  EXPECT_EQ(r->nondeterminismReport.rfind("word 1 differs (0x", 0), 0u) << r->nondeterminismReport;
  auto twin = runner.run(launch("store_scalar", 0, 1));
  ASSERT_TRUE(twin.ok());
  EXPECT_TRUE(twin->deterministic);
  EXPECT_EQ(twin->nondeterminismReport, "");
}

TEST(GpuRunner, ComparesUnorderedRangesAsMultisetsBetweenRuns) {
  Runner runner = openFake();
  GpuLaunch l = launch("swap", 40, 0);  // words 10 and 11
  auto strict = runner.run(l);
  ASSERT_TRUE(strict.ok()) << strict.error().str();
  EXPECT_FALSE(strict->deterministic);
  EXPECT_NE(strict->nondeterminismReport.find("word 10 differs"), std::string::npos)
      << strict->nondeterminismReport;
  l.unordered = {{10, 2}};
  auto r = runner.run(l);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->deterministic);
  EXPECT_EQ(r->global[10] + r->global[11], 3u);
  l.unordered = {{10, 1}};  // one word of the two is not enough
  auto half = runner.run(l);
  ASSERT_TRUE(half.ok());
  EXPECT_FALSE(half->deterministic);
  l.unordered = {{125, 2}};
  auto outside = runner.run(l);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().kind, ErrorKind::Usage);
}

TEST(FirstDifference, FindsTheFirstDifferingWord) {
  EXPECT_FALSE(firstDifference({1, 2, 3}, {1, 2, 3}).has_value());
  EXPECT_EQ(firstDifference({1, 2, 3}, {1, 5, 6}), 1u);
  EXPECT_EQ(firstDifference({1, 2}, {1, 2, 3}), 2u);
}

TEST(FirstDifference, ComparesUnorderedRangesAsMultisets) {
  EXPECT_FALSE(firstDifference({9, 1, 2, 3}, {9, 3, 1, 2}, {{1, 3}}).has_value());
  EXPECT_EQ(firstDifference({9, 1, 2, 3}, {9, 3, 1, 1}, {{1, 3}}), 1u);
  EXPECT_EQ(firstDifference({9, 1, 2, 3}, {8, 3, 1, 1}, {{1, 3}}), 0u);  // earlier plain word
  EXPECT_EQ(firstDifference({9, 1, 2, 3}, {9, 2, 1, 4}, {{1, 2}}), 3u);  // after the range
}

TEST(GpuRunner, CatchesAWriteJustBeforeTheImage) {
  Runner runner = openFake();
  auto r = runner.run(launch("write_before", 0, 0));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->guardsIntact);
  EXPECT_EQ(r->guardReport,
            "guard word at image offset -1 (byte -4) changed: 0xc0def00d -> 0x00000007");
}

TEST(GpuRunner, CatchesAWriteJustPastTheImage) {
  Runner runner = openFake();
  auto r = runner.run(launch("write_at", 0, 126));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->guardsIntact);
  EXPECT_NE(r->guardReport.find("image offset 126 (byte 504)"), std::string::npos)
      << r->guardReport;
}

TEST(GpuRunner, PassesTheDynamicSharedBytesToTheLaunch) {
  // The fake kernel stores cuLaunchKernel's sharedMemBytes: 12 for `shared=3`; 0 by default.
  Runner runner = openFake();
  GpuLaunch l = launch("store_shared", 0, 0);
  l.dynamicSharedBytes = 12;
  auto r = runner.run(l);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->global[0], 12u);
  auto none = runner.run(launch("store_shared", 0, 0));
  ASSERT_TRUE(none.ok()) << none.error().str();
  EXPECT_EQ(none->global[0], 0u);
}

TEST(GpuRunner, AWriteToTheLastWordIsInBounds) {
  Runner runner = openFake();
  auto r = runner.run(launch("write_at", 0, 125));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->guardsIntact) << r->guardReport;
  EXPECT_EQ(r->global[125], 9u);
}

TEST(GpuRunner, ReportsTheJitErrorLogWhenTheModuleDoesNotLoad) {
  Runner runner = openFake();
  GpuLaunch l = launch("store_scalar", 0, 0);
  l.ptx += "// FAKE_JIT_ERROR\n";
  auto r = runner.run(l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Device);
  EXPECT_NE(r.error().message.find("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"),
            std::string::npos);
  EXPECT_NE(r.error().message.find("line 3; error   : fake syntax error"), std::string::npos)
      << r.error().message;
}

TEST(GpuRunner, ReportsALaunchFailureAndRecoversTheContext) {
  Runner runner = openFake();
  FakeCudaStats before = fakeStats();
  auto r = runner.run(launch("launch_fails", 0, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED");
  auto s = runner.run(launch("sync_fails", 0, 0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  FakeCudaStats after = fakeStats();
  EXPECT_EQ(after.resets - before.resets, 2);
  EXPECT_EQ(after.allocs - before.allocs, after.frees - before.frees);
  // The next kernel runs in the re-created context.
  EXPECT_TRUE(runner.run(launch("store_scalar", 0, 5)).ok());
}

TEST(GpuRunner, ReportsAnAllocationFailure) {
  Runner runner = openFake("alloc-fails");  // the fake reads its mode at cuInit
  auto r = runner.run(launch("store_scalar", 0, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(GpuRunner, ReportsAnEntryTheDriverDoesNotFind) {
  Runner runner = openFake();
  auto r = runner.run(launch("not_in_driver", 0, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Device);
  EXPECT_NE(r.error().message.find("cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"),
            std::string::npos);
}

TEST(GpuRunner, RejectsLaunchesThatDisagreeWithThePtxEntry) {
  Runner runner = openFake();
  GpuLaunch l = launch("store_scalar", 0, 0);
  l.params.push_back(0);
  l.paramIsPointer.push_back(false);
  auto r = runner.run(l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("declares 2 parameters, launch gives 3"), std::string::npos);

  GpuLaunch p = launch("store_scalar", 0, 0);
  p.paramIsPointer = {true, true};  // the second is .u32 in the PTX
  auto q = runner.run(p);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, ErrorKind::Usage);
  EXPECT_NE(q.error().message.find("is a pointer but the PTX declares it 32-bit"),
            std::string::npos);

  auto far = runner.run(launch("store_scalar", 505, 0));  // past the 504-byte image
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().kind, ErrorKind::Usage);

  auto none = runner.run(launch("no_such_entry", 0, 0));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::Usage);
}

TEST(EntryParamSizes, ReadsSizesInOrder) {
  auto s = entryParamSizes(
      ".visible .entry k(\n .param .u64 k_param_0,\n .param .u32 k_param_1,\n"
      " .param .b64 k_param_2, .param .s32 k_param_3\n)\n{ ret; }",
      "k");
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_EQ(*s, (std::vector<uint32_t>{8, 4, 8, 4}));
}

TEST(EntryParamSizes, MatchesTheWholeEntryName) {
  std::string ptx = ".entry dot2(.param .u32 a) {}\n.entry dot(.param .u64 a, .param .u64 b) {}";
  auto s = entryParamSizes(ptx, "dot");
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_EQ(*s, (std::vector<uint32_t>{8, 8}));
  auto none = entryParamSizes(ptx, "do");
  EXPECT_FALSE(none.ok());
}

TEST(EntryParamSizes, AcceptsAnEntryWithoutParameters) {
  auto s = entryParamSizes(".entry k()\n{ ret; }", "k");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
}

TEST(EntryParamSizes, RejectsAggregateParameters) {
  auto s = entryParamSizes(".entry k(.param .align 8 .b8 k_param_0[16]) {}", "k");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::Usage);
  EXPECT_NE(s.error().message.find("'.align'"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace qgpu::gpu
