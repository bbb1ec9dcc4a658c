// qgpu/harness/tests/gpu_cases_test.cpp — the GPU leg's launch as built from a kernel file
// (harness::gpuLaunch), without compiling: the launch line's `shared=W` reaches cuLaunchKernel as
// 4W dynamic shared bytes (gpu_runner_test checks that the runner passes it on); gitCommit on
// hand-made .git layouts (a checkout, a worktree, packed refs). Label cpu.
#include "harness/gpu_cases.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace qgpu::harness {
namespace {

Expected<gpu::GpuLaunch> launchOf(const std::string& launchLine) {
  const std::string text = "// qgpu-kernel: k\n// summary: s\n// launch: " + launchLine +
                           "\n// param: out out i32[4]\n// expect: out = 0 0 0 0\n\n"
                           "__global__ void k(int* out) {}\n";
  QGPU_TRY(spec, kernels::parseKernelText(text, "k.cu"));
  QGPU_TRY(image, kernels::layout(spec));
  BuiltKernel kernel;
  kernel.entry = "k";
  kernel.image = image;
  return gpuLaunch(spec, kernel);
}

TEST(GpuLaunchFromKernelFile, CarriesTheLaunchLinesDynamicSharedBytes) {
  auto withShared = launchOf("grid=2 block=4 shared=3");
  ASSERT_TRUE(withShared.ok()) << withShared.error().str();
  EXPECT_EQ(withShared->dynamicSharedBytes, 12u);  // 3 words
  EXPECT_EQ(withShared->gridX, 2u);
  EXPECT_EQ(withShared->blockX, 4u);
  auto without = launchOf("grid=1 block=4");
  ASSERT_TRUE(without.ok()) << without.error().str();
  EXPECT_EQ(without->dynamicSharedBytes, 0u);
}

// A scratch directory with files of given contents, removed at the end.
class GitLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("qgpu_git_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void file(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  std::string dir(const std::string& path) const { return (root_ / path).string(); }
  std::filesystem::path root_;
};

const std::string kShaA(40, 'a'), kShaB(40, 'b');

TEST_F(GitLayout, ReadsABranchOfACheckout) {
  file("repo/.git/HEAD", "ref: refs/heads/main");
  file("repo/.git/refs/heads/main", kShaA);
  EXPECT_EQ(gitCommit(dir("repo")), kShaA);
}

TEST_F(GitLayout, ReadsADetachedHeadAndPackedRefs) {
  file("detached/.git/HEAD", kShaB);
  EXPECT_EQ(gitCommit(dir("detached")), kShaB);
  file("packed/.git/HEAD", "ref: refs/heads/main");
  file("packed/.git/packed-refs", "# pack-refs with: peeled\n" + kShaB + " refs/heads/main");
  EXPECT_EQ(gitCommit(dir("packed")), kShaB);
}

TEST_F(GitLayout, FollowsAWorktreesGitFileToItsHeadAndTheCommonRefs) {
  file("repo/.git/refs/heads/main", kShaA);
  file("repo/.git/refs/heads/topic", kShaB);
  file("repo/.git/worktrees/wt/HEAD", "ref: refs/heads/topic");
  file("repo/.git/worktrees/wt/commondir", "../..");
  file("wt/.git", "gitdir: " + dir("repo/.git/worktrees/wt"));
  EXPECT_EQ(gitCommit(dir("wt")), kShaB);
  file("rel/.git", "gitdir: ../repo/.git/worktrees/wt");  // a relative gitdir
  EXPECT_EQ(gitCommit(dir("rel")), kShaB);
}

TEST_F(GitLayout, SaysUnknownWithoutARepository) {
  EXPECT_EQ(gitCommit(dir("nothing")), "unknown");
  file("broken/.git/HEAD", "ref: refs/heads/gone");
  EXPECT_EQ(gitCommit(dir("broken")), "unknown");
}

}  // namespace
}  // namespace qgpu::harness
