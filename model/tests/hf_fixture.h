// qgpu/model/tests/hf_fixture.h — reading a transformers reference run recorded as a safetensors
// fixture (written by ci/hf_reference.py and ci/train_base.py): its metadata, prompt, greedy
// tokens and the prefill / decode logits. Shared by the decoder and base-model tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/digest.h"
#include "model/safetensors.h"

namespace qgpu::model {

struct HfFixture {
  std::shared_ptr<SafetensorsFile> file;
  std::map<std::string, std::string> meta;
  std::vector<int64_t> prompt, greedy;
  std::vector<float> prefill, decode;  // [L, V], [N, V]
  int64_t vocab = 0;

  template <typename T>
  std::vector<T> read(const std::string& name) {
    const StTensorInfo* info = file->header().find(name);
    EXPECT_NE(info, nullptr) << name;
    if (info == nullptr) return {};
    auto bytes = file->bytes(*info);
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
};

// Opens the fixture and validates its header before use (a fixture of another kind or version
// must not be compared), then reads the four tensors.
inline HfFixture loadHfFixture(const std::string& path, const std::string& kind) {
  HfFixture fx;
  auto file = SafetensorsFile::open(path);
  EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error().str());
  if (!file.ok()) return fx;
  fx.file = *file;
  fx.meta = fx.file->header().metadata;
  EXPECT_EQ(fx.meta["qgpu_fixture"], kind);
  EXPECT_EQ(fx.meta["version"], "1");
  fx.prompt = fx.read<int64_t>("prompt");
  fx.greedy = fx.read<int64_t>("greedy");
  fx.prefill = fx.read<float>("prefill_logits");
  fx.decode = fx.read<float>("decode_logits");
  if (const StTensorInfo* logits = fx.file->header().find("prefill_logits"))
    fx.vocab = logits->shape.at(1);
  return fx;
}

// FNV-1a 64 of a file's bytes as 16 hex digits: how fixtures name the weights they came from.
inline std::string fileDigestHex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(bytes)));
  return hex;
}

}  // namespace qgpu::model
