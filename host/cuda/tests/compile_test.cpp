// qgpu/host/cuda/tests/compile_test.cpp — the compiler driver against the real tools (label tools).
// A test whose tool is not installed is skipped with the reason, never passed.
#include "host/cuda/compile.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace qgpu::host {
namespace {

constexpr const char* kTinyKernel = R"(__global__ void add_one(int* out) {
  out[threadIdx.x] += 1;
}
)";

// Line 3 has an operator without its right operand (both compilers stop at the `;` there).
constexpr const char* kBrokenKernel = R"(__global__ void broken(int* out) {
  int x = threadIdx.x;
  out[x] = x + ;
}
)";

// Sets an environment variable for one scope and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

#define SKIP_WITHOUT(compiler)                                                       \
  do {                                                                               \
    auto found = toolPath(compiler);                                                 \
    if (!found) GTEST_SKIP() << "tool missing: " << found.error().message;           \
  } while (0)

class CompileEach : public ::testing::TestWithParam<Compiler> {};

TEST_P(CompileEach, TinyKernelGivesPtxWithItsEntry) {
  SKIP_WITHOUT(GetParam());
  auto ptx = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(ptx.ok()) << ptx.error().str();
  EXPECT_NE(ptx->find(".entry"), std::string::npos);
  EXPECT_NE(ptx->find("add_one"), std::string::npos);
  EXPECT_NE(ptx->find("%tid.x"), std::string::npos);
  EXPECT_NE(ptx->find(".target sm_75"), std::string::npos);
}

TEST_P(CompileEach, ArchOptionReachesTheTarget) {
  SKIP_WITHOUT(GetParam());
  CompileOptions options;
  options.arch = "sm_80";
  auto ptx = compileToPtx(kTinyKernel, GetParam(), options);
  ASSERT_TRUE(ptx.ok()) << ptx.error().str();
  EXPECT_NE(ptx->find(".target sm_80"), std::string::npos);
}

TEST_P(CompileEach, SyntaxErrorOnLine3IsCompileFailedAtLine3) {
  SKIP_WITHOUT(GetParam());
  CompileOptions options;
  options.fileName = "broken.cu";
  auto ptx = compileToPtx(kBrokenKernel, GetParam(), options);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.error().kind, ErrorKind::CompileFailed) << ptx.error().str();
  EXPECT_EQ(ptx.error().loc.file, "broken.cu");
  EXPECT_EQ(ptx.error().loc.line, 3u) << ptx.error().str();
  // The first message line is the compiler's error; the temp path never leaks.
  std::string first = ptx.error().message.substr(0, ptx.error().message.find('\n'));
  EXPECT_NE(first.find("error"), std::string::npos) << first;
  EXPECT_EQ(ptx.error().message.find("qgpu-cuda-"), std::string::npos) << ptx.error().message;
}

// A fatal error (clang "fatal error:", nvcc "catastrophic error:") is located too.
TEST_P(CompileEach, MissingIncludeOnLine2IsCompileFailedAtLine2) {
  SKIP_WITHOUT(GetParam());
  CompileOptions options;
  options.fileName = "include.cu";
  auto ptx = compileToPtx("// a kernel\n#include \"no_such_header.h\"\n__global__ void k() {}\n",
                          GetParam(), options);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.error().kind, ErrorKind::CompileFailed);
  EXPECT_EQ(ptx.error().loc.line, 2u) << ptx.error().str();
  if (GetParam() == Compiler::Clang) {
    EXPECT_GT(ptx.error().loc.column, 0u);
  }
  EXPECT_NE(ptx.error().message.find("no_such_header.h"), std::string::npos);
}

// The failing twin of the compile tests: a well-formed kernel is not reported as line 3.
TEST_P(CompileEach, WellFormedKernelHasNoError) {
  SKIP_WITHOUT(GetParam());
  EXPECT_TRUE(compileToPtx(kTinyKernel, GetParam()).ok());
}

TEST_P(CompileEach, PtxOfBothArchsPassesPtxas) {
  SKIP_WITHOUT(GetParam());
  if (!ptxasAvailable()) GTEST_SKIP() << "tool missing: " << ptxasPath().error().message;
  auto ptx = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(ptx.ok()) << ptx.error().str();
  EXPECT_TRUE(ptxasCheck(*ptx, "sm_75").ok());
  EXPECT_TRUE(ptxasCheck(*ptx, "sm_90").ok());
}

// A scratch cache directory for one test ($QGPU_COMPILE_CACHE, compile.h).
class CacheDir {
 public:
  CacheDir() {
    char tmpl[] = "/tmp/qgpu_compile_cache_test_XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~CacheDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(path_)) files.push_back(e.path());
    return files;
  }

 private:
  std::string path_;
};

TEST_P(CompileEach, TheCacheKeepsEachSuccessOnceAndNoFailure) {
  SKIP_WITHOUT(GetParam());
  auto uncached = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(uncached.ok()) << uncached.error().str();
  CacheDir cache;
  ScopedEnv env("QGPU_COMPILE_CACHE", cache.path().c_str());
  auto first = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(first.ok()) << first.error().str();
  EXPECT_EQ(*first, *uncached);
  ASSERT_EQ(cache.entries().size(), 1u);
  auto second = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *uncached);
  EXPECT_EQ(cache.entries().size(), 1u);
  // Another source is another entry; a failing compile stores nothing and still fails.
  ASSERT_TRUE(compileToPtx(std::string(kTinyKernel) + "// another\n", GetParam()).ok());
  EXPECT_EQ(cache.entries().size(), 2u);
  CompileOptions options;
  options.fileName = "broken.cu";
  EXPECT_FALSE(compileToPtx(kBrokenKernel, GetParam(), options).ok());
  EXPECT_FALSE(compileToPtx(kBrokenKernel, GetParam(), options).ok());
  EXPECT_EQ(cache.entries().size(), 2u);
}

TEST_P(CompileEach, AnEditedCacheEntryIsAMissAndIsReplaced) {
  SKIP_WITHOUT(GetParam());
  CacheDir cache;
  ScopedEnv env("QGPU_COMPILE_CACHE", cache.path().c_str());
  auto real = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(real.ok()) << real.error().str();
  ASSERT_EQ(cache.entries().size(), 1u);
  const auto entry = cache.entries()[0];
  std::string text;
  {
    std::ifstream in(entry);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t at = text.find("add_one");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 7, "add_two");  // the stored digest no longer matches the PTX
  std::ofstream(entry, std::ios::trunc) << text;
  auto again = compileToPtx(kTinyKernel, GetParam());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *real);
  EXPECT_EQ(again->find("add_two"), std::string::npos);
}

// The key holds the dialect header's contents: an edited header is a new entry, not a stale hit.
TEST(CompileCache, AnEditedDialectHeaderIsANewEntry) {
  SKIP_WITHOUT(Compiler::Clang);
  CacheDir cache;
  ScopedEnv env("QGPU_COMPILE_CACHE", cache.path().c_str());
  CacheDir headerDir;  // a copy of the dialect header (and its include directory) to edit
  const std::string header = headerDir.path() + "/qgpu_cuda.h";
  std::filesystem::copy_file(std::string(QGPU_SOURCE_DIR) + "/kernels/qgpu_cuda.h", header);
  std::filesystem::copy(std::string(QGPU_SOURCE_DIR) + "/kernels/include",
                        headerDir.path() + "/include");
  CompileOptions options;
  options.dialectHeader = header;
  ASSERT_TRUE(compileToPtx(kTinyKernel, Compiler::Clang, options).ok());
  std::ofstream(header, std::ios::app) << "\n#define QGPU_CACHE_TEST_EDIT 1\n";
  ASSERT_TRUE(compileToPtx(kTinyKernel, Compiler::Clang, options).ok());
  EXPECT_EQ(cache.entries().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, CompileEach, ::testing::Values(Compiler::Clang, Compiler::Nvcc),
                         [](const auto& info) { return std::string(compilerName(info.param)); });

TEST(Ptxas, RejectsGarbagePtx) {
  if (!ptxasAvailable()) GTEST_SKIP() << "tool missing: " << ptxasPath().error().message;
  Status status = ptxasCheck(".version 6.4\n.target sm_75\n.address_size 64\nthis is not ptx;\n",
                             "sm_75");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::CompileFailed);
  EXPECT_NE(status.error().message.find("ptxas"), std::string::npos);
  EXPECT_EQ(status.error().loc.line, 4u) << status.error().str();
}

TEST(Ptxas, AcceptsMinimalValidPtx) {
  if (!ptxasAvailable()) GTEST_SKIP() << "tool missing: " << ptxasPath().error().message;
  Status status = ptxasCheck(
      ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n", "sm_75");
  EXPECT_TRUE(status.ok()) << status.error().str();
}

TEST(ToolLookup, OverrideToNonexistentPathIsToolMissing) {
  {
    ScopedEnv env("QGPU_CLANG", "/nonexistent/clang-14");
    EXPECT_FALSE(toolAvailable(Compiler::Clang));
    auto ptx = compileToPtx(kTinyKernel, Compiler::Clang);
    ASSERT_FALSE(ptx.ok());
    EXPECT_EQ(ptx.error().kind, ErrorKind::ToolMissing);
    EXPECT_NE(ptx.error().message.find("/nonexistent/clang-14"), std::string::npos);
  }
  {
    ScopedEnv env("QGPU_NVCC", "/nonexistent/nvcc");
    auto ptx = compileToPtx(kTinyKernel, Compiler::Nvcc);
    ASSERT_FALSE(ptx.ok());
    EXPECT_EQ(ptx.error().kind, ErrorKind::ToolMissing);
  }
  {
    ScopedEnv env("QGPU_PTXAS", "/nonexistent/ptxas");
    EXPECT_FALSE(ptxasAvailable());
    Status status = ptxasCheck(".version 6.4\n", "sm_75");
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().kind, ErrorKind::ToolMissing);
  }
}

// Twin: an override naming a real executable is used (here: the tool found without override).
TEST(ToolLookup, OverrideToRealToolIsUsed) {
  auto real = toolPath(Compiler::Clang);
  if (!real) GTEST_SKIP() << "tool missing: " << real.error().message;
  ScopedEnv env("QGPU_CLANG", real->c_str());
  auto path = toolPath(Compiler::Clang);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, *real);
}

TEST(Timeout, SlowToolIsKilledAndReportedAsTimedOut) {
  // A fake nvcc that never finishes: a script that sleeps (the driver itself uses no shell; the
  // fake tool may). Its process group is killed, so the sleep does not outlive the test.
  char dirTemplate[] = "/tmp/qgpu-fake-nvcc-XXXXXX";
  ASSERT_NE(::mkdtemp(dirTemplate), nullptr);
  const std::string fake = std::string(dirTemplate) + "/nvcc";
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\nsleep 30\n";
  }
  ::chmod(fake.c_str(), 0755);
  ScopedEnv env("QGPU_NVCC", fake.c_str());
  CompileOptions options;
  options.timeoutSeconds = 1;
  auto start = std::chrono::steady_clock::now();
  auto ptx = compileToPtx(kTinyKernel, Compiler::Nvcc, options);
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove_all(dirTemplate);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.error().kind, ErrorKind::CompileFailed);
  EXPECT_NE(ptx.error().message.find("timed out"), std::string::npos) << ptx.error().message;
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace qgpu::host
