// Atomic writes (atomic_file.h) and provenance (provenance.h): a write leaves the whole new file
// or the old one and no temporary beside it; provenance never fails, outside a checkout too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/report/atomic_file.h"
#include "harness/report/provenance.h"

namespace qgpu::report {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("qgpu-report-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(WriteFileAtomic, WritesAndReplacesLeavingNoTemporary) {
  TempDir dir;
  fs::path f = dir.path / "r.json";
  ASSERT_TRUE(writeFileAtomic(f.string(), "first").ok());
  EXPECT_EQ(slurp(f), "first");
  ASSERT_TRUE(writeFileAtomic(f.string(), "second, longer").ok());
  EXPECT_EQ(slurp(f), "second, longer");
  EXPECT_EQ(entries(dir.path), 1u);
}

TEST(WriteFileAtomic, RefusesAMissingDirectoryAndADirectoryTarget) {
  TempDir dir;
  auto missing = writeFileAtomic((dir.path / "no" / "r.json").string(), "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);
  fs::create_directory(dir.path / "d");
  auto directory = writeFileAtomic((dir.path / "d").string(), "x");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().kind, ErrorKind::Io);
  EXPECT_TRUE(fs::is_directory(dir.path / "d"));
  EXPECT_EQ(entries(dir.path), 1u);  // no temporary left behind
}

TEST(Provenance, OutsideACheckoutIsUnknownNotAnError) {
  TempDir dir;
  Provenance p = collectProvenance(dir.path.string(), "");
  EXPECT_EQ(p.commit, "unknown");
  EXPECT_EQ(p.dirty, "unknown");
  EXPECT_NE(p.host, "");
  EXPECT_EQ(p.tools.count("libtorch"), 0u);
  EXPECT_EQ(p.tools.count("cudaDriver"), 0u);
}

TEST(Provenance, InACheckoutNamesTheCommit) {
  if (commandOutput("git --version").empty()) GTEST_SKIP() << "no git here";
  TempDir dir;
  std::string git = "git -C " + shellQuote(dir.path.string());
  ASSERT_FALSE(commandOutput(git + " init -q && " + git + " -c user.name=t -c user.email=t@t " +
                             "commit -q --allow-empty -m x && echo ok").empty());
  std::string head = commandOutput(git + " rev-parse HEAD");
  Provenance clean = collectProvenance(dir.path.string(), "2.1.0");
  EXPECT_EQ(clean.commit + "\n", head);
  EXPECT_EQ(clean.dirty, "false");
  EXPECT_EQ(clean.tools["libtorch"], "2.1.0");
  std::ofstream(dir.path / "new.txt") << "x";  // an untracked file makes the tree dirty
  EXPECT_EQ(collectProvenance(dir.path.string(), "").dirty, "true");
}

TEST(Provenance, GpuAndDriverVersion) {
  Provenance p;
  setGpu(p, "NVIDIA H200", 13000);
  EXPECT_EQ(p.gpu, "NVIDIA H200");
  EXPECT_EQ(p.tools["cudaDriver"], "13.0");
  setGpu(p, "X", 12040);
  EXPECT_EQ(p.tools["cudaDriver"], "12.4");
}

TEST(ShellQuote, QuotesSingleQuotes) {
  EXPECT_EQ(shellQuote("a'b"), "'a'\\''b'");
  EXPECT_EQ(commandOutput("printf %s " + shellQuote("it's $HOME")), "it's $HOME");
}

}  // namespace
}  // namespace qgpu::report
