// Provenance (provenance.h): it never fails, outside a checkout too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
