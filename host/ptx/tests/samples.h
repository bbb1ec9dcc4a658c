// qgpu/host/ptx/tests/samples.h — the committed PTX samples of host/ptx/tests/data/.
#pragma once

#include <string>
#include <vector>

namespace qgpu::ptx::testing {

struct Sample {
  std::string name;  // "vector_add.clang.ptx"
  std::string text;
};

std::vector<Sample> allSamples();              // every *.ptx in data/, sorted by name
std::string readSample(const std::string& name);  // one file's text; aborts the test if absent

}  // namespace qgpu::ptx::testing
