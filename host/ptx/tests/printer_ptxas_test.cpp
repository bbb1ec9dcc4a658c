// qgpu/host/ptx/tests/printer_ptxas_test.cpp — print() output is PTX that NVIDIA's assembler
// accepts (ptxas -arch=sm_75), for every sample. Label `tools`: skipped (exit 77) without ptxas.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "host/ptx/parser.h"
#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

std::string ptxas() {
  if (const char* env = std::getenv("QGPU_PTXAS")) return env;
  return "/usr/local/cuda/bin/ptxas";
}

TEST(PtxPrinter, PtxasAcceptsPrintedSamples) {
  if (!std::filesystem::exists(ptxas())) GTEST_SKIP() << "ptxas not found at " << ptxas();
  auto dir = std::filesystem::temp_directory_path() / ("qgpu_ptx_printer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& s : testing::allSamples()) {
    auto m = parse(s.text, s.name);
    ASSERT_TRUE(m.ok()) << m.error().str();
    auto path = dir / s.name;
    std::ofstream(path) << print(*m);
    std::string cmd = ptxas() + " -arch=sm_75 " + path.string() + " -o /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qgpu::ptx
