// qgpu/host/ptx/tests/samples.cpp — loads the PTX samples (paths from QGPU_SOURCE_DIR).
#include "host/ptx/tests/samples.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qgpu::ptx::testing {
namespace {
std::filesystem::path dataDir() { return std::filesystem::path(QGPU_SOURCE_DIR) / "host/ptx/tests/data"; }
}  // namespace

std::string readSample(const std::string& name) {
  std::ifstream in(dataDir() / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing sample " << (dataDir() / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Sample> allSamples() {
  std::vector<Sample> out;
  for (const auto& entry : std::filesystem::directory_iterator(dataDir()))
    if (entry.path().extension() == ".ptx")
      out.push_back({entry.path().filename().string(), readSample(entry.path().filename().string())});
  std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.name < b.name; });
  return out;
}

}  // namespace qgpu::ptx::testing
