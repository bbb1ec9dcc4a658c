// qgpu/gpu/tests/inputs_test.cpp — the exported inputs format the GPU machine reads.
#include "gpu/inputs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpu/recording.h"

namespace qgpu::gpu {
namespace {

namespace fs = std::filesystem;

Inputs sampleInputs() {
  Inputs in;
  in.commit = "0123abc";
  GpuCase c;
  c.kernel = "vec_add";
  c.compiler = "clang";
  c.ptxFile = "vec_add.clang.ptx";
  c.launch.ptx = ".visible .entry vec_add(.param .u64 a, .param .u32 n) { ret; }\n";
  c.digest = ptxDigest(c.launch.ptx);
  c.launch.entry = "vec_add";
  c.launch.gridX = 2;
  c.launch.blockX = 4;
  c.launch.global = {1, 2, 0xffffffffu, 4};
  c.launch.params = {8, 3};
  c.launch.paramIsPointer = {true, false};
  c.launch.unordered = {{2, 2}};
  c.expected = std::vector<uint32_t>{1, 2, 7, 4};
  in.cases.push_back(c);
  GpuCase d = c;
  d.compiler = "nvcc";
  d.ptxFile = "vec_add.nvcc.ptx";
  d.expected.reset();
  d.expectedError = makeDiag(ErrorKind::MachineFault, "out of bounds\nsecond line");
  d.launch.dynamicSharedBytes = 12;  // `shared=3`
  in.cases.push_back(d);
  return in;
}

class GpuInputs : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("qgpu_inputs_test_" + std::to_string(::getpid()) + "_" +
             testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    ASSERT_TRUE(writeInputs(sampleInputs(), dir_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string manifest() const {
    std::ifstream in(dir_ + "/manifest.txt");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string errorAfter(const std::string& from, const std::string& to) const {
    std::string m = manifest();
    size_t at = m.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    m.replace(at, from.size(), to);
    auto r = parseManifest(m, dir_ + "/manifest.txt", dir_);
    EXPECT_FALSE(r.ok()) << "accepted after replacing '" << from << "'";
    if (r.ok()) return "";
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_GT(r.error().loc.line, 0u);
    return r.error().message;
  }

  std::string dir_;
};

TEST_F(GpuInputs, RoundTripsThroughFiles) {
  auto r = readInputs(dir_);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->commit, "0123abc");
  ASSERT_EQ(r->cases.size(), 2u);
  const GpuCase& c = r->cases[0];
  EXPECT_EQ(c.launch.ptx, sampleInputs().cases[0].launch.ptx);
  EXPECT_EQ(c.launch.gridX, 2u);
  EXPECT_EQ(c.launch.blockX, 4u);
  EXPECT_EQ(c.launch.global, (std::vector<uint32_t>{1, 2, 0xffffffffu, 4}));
  EXPECT_EQ(c.launch.params, (std::vector<uint32_t>{8, 3}));
  EXPECT_EQ(c.launch.paramIsPointer, (std::vector<bool>{true, false}));
  ASSERT_EQ(c.launch.unordered.size(), 1u);
  EXPECT_EQ(c.launch.unordered[0].first, 2u);
  EXPECT_EQ(c.launch.unordered[0].count, 2u);
  ASSERT_TRUE(c.expected.has_value());
  EXPECT_EQ(*c.expected, (std::vector<uint32_t>{1, 2, 7, 4}));
  EXPECT_FALSE(r->cases[1].expected.has_value());
  ASSERT_TRUE(r->cases[1].expectedError.has_value());
  EXPECT_EQ(r->cases[1].expectedError->kind, ErrorKind::MachineFault);
  EXPECT_EQ(r->cases[1].expectedError->message, "out of bounds second line");
  EXPECT_EQ(c.launch.dynamicSharedBytes, 0u);  // no `shared` line
  EXPECT_EQ(r->cases[1].launch.dynamicSharedBytes, 12u);
}

TEST_F(GpuInputs, WritesTheSharedLineOnlyForDynamicSharedMemory) {
  const std::string m = manifest();
  EXPECT_EQ(m.find("shared "), m.rfind("shared "));  // once: the nvcc case only
  EXPECT_NE(m.find("launch 2 4\nshared 12\n"), std::string::npos) << m;
  EXPECT_NE(errorAfter("shared 12", "shared 13").find("multiple of 4"), std::string::npos);
  EXPECT_NE(errorAfter("shared 12", "shared 0").find("multiple of 4"), std::string::npos);
  EXPECT_NE(errorAfter("shared 12", "shared 508").find("4..504"), std::string::npos);
}

TEST_F(GpuInputs, RejectsAPtxFileEditedAfterExport) {
  std::ofstream(dir_ + "/vec_add.clang.ptx", std::ios::app) << "// edited\n";
  auto r = readInputs(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("edited after export"), std::string::npos);
}

TEST_F(GpuInputs, RejectsMalformedManifests) {
  EXPECT_NE(errorAfter("qgpu-gpu-inputs 1", "qgpu-gpu-inputs 2").find("version 2"), std::string::npos);
  EXPECT_NE(errorAfter("qgpu-gpu-inputs 1", "qgpu-inputs 1").find("first line"), std::string::npos);
  EXPECT_NE(errorAfter("params p:8 s:3", "params q:8 s:3").find("'q:8'"), std::string::npos);
  EXPECT_NE(errorAfter("params p:8 s:3", "params p:8 s:4294967296").find("s:4294967296"),
            std::string::npos);
  EXPECT_NE(errorAfter("unordered 2:2", "unordered 2:3").find("outside the image"),
            std::string::npos);
  EXPECT_NE(errorAfter("unordered 2:2", "unordered 2").find("'2'"), std::string::npos);
  EXPECT_NE(errorAfter("launch 2 4", "launch 0 4").find("launch"), std::string::npos);
  EXPECT_NE(errorAfter("global 00000001", "global 0000000g").find("hex word"), std::string::npos);
  EXPECT_NE(errorAfter("entry vec_add\n", "").find("no 'entry' line"), std::string::npos);
  EXPECT_NE(errorAfter("expect 00000001 00000002 00000007 00000004",
                       "expect 00000001 00000002 00000007").find("'expect' has 3 words"),
            std::string::npos);
  EXPECT_NE(errorAfter("launch 2 4\n", "launch 2 4\nlaunch 2 4\n").find("second 'launch'"),
            std::string::npos);
  EXPECT_NE(errorAfter("expect-error MachineFault", "expect-error Bogus").find("expect-error"),
            std::string::npos);
  EXPECT_NE(errorAfter("commit 0123abc", "bogus 0123abc").find("outside a case"), std::string::npos);
}

TEST_F(GpuInputs, RejectsACaseWithoutEnd) {
  std::string m = manifest();
  m.erase(m.rfind("end\n"));
  auto r = parseManifest(m, "manifest.txt", dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no 'end' line"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::gpu
