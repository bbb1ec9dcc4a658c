// qgpu/model/tests/tap_test.cpp — Decoder::forwardTapped, the per-layer activation tap
// (model/decoder.h `Activation`): what it pins down —
//   - the tap changes nothing: its logits are forward()'s, bit for bit, on the chunked prefill and
//     on the one-token decode path;
//   - every layer is tapped, each name with its shape (linear layers: the conv, z and b inputs of
//     their nonlinearities; every layer: its input residual and its MLP gate), a row per position;
//   - layer 0's input residual is the embedding rows of the tokens, read from the file itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/decoder.h"
#include "model/safetensors.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

namespace fs = std::filesystem;

struct Tiny {
  std::string dir;
  Qwen35Config config;
};

const Tiny& tiny() {
  static const Tiny t = [] {
    Tiny x;
    x.config = tinyConfig(64, 4, 128);  // a full_attention layer among the linear ones
    x.dir = (fs::temp_directory_path() / ("qgpu_tap_" + std::to_string(::getpid()))).string();
    fs::remove_all(x.dir);
    EXPECT_TRUE(generateTinyCheckpoint(x.dir, TinySpec{x.config, 3}).ok());
    return x;
  }();
  return t;
}

std::vector<int64_t> tokens(size_t n) {
  std::vector<int64_t> t;
  for (size_t i = 0; i < n; ++i) t.push_back(static_cast<int64_t>((i * 37 + 11) % 128));
  return t;
}

TEST(DecoderTap, LogitsAreForwardsOnThePrefillAndTheDecodePath) {
  auto dec = Decoder::load(tiny().dir);
  ASSERT_TRUE(dec.ok()) << dec.error().message;
  const std::vector<int64_t> ids = tokens(70);  // longer than the 64-token chunk
  auto plain = (*dec)->forward(ids, true);
  const int64_t next = 5;
  auto plainStep = (*dec)->forward(std::span<const int64_t>(&next, 1));
  (*dec)->reset();
  auto tapped = (*dec)->forwardTapped(ids, true);
  auto tappedStep = (*dec)->forwardTapped(std::span<const int64_t>(&next, 1));
  ASSERT_TRUE(plain.ok() && plainStep.ok() && tapped.ok() && tappedStep.ok());
  EXPECT_EQ(plain->data, tapped->logits.data);
  EXPECT_EQ(plainStep->data, tappedStep->logits.data);
  for (const Activation& a : tappedStep->activations) EXPECT_EQ(a.rows, 1) << a.name << " " << a.layer;
}

TEST(DecoderTap, EveryLayerIsTappedWithItsShapes) {
  const Qwen35Config& c = tiny().config;
  auto dec = Decoder::load(tiny().dir);
  ASSERT_TRUE(dec.ok());
  auto t = (*dec)->forwardTapped(tokens(9));
  ASSERT_TRUE(t.ok());
  std::map<std::pair<std::string, int>, const Activation*> byName;
  for (const Activation& a : t->activations) {
    EXPECT_TRUE(byName.emplace(std::make_pair(a.name, a.layer), &a).second) << "twice: " << a.name;
    EXPECT_EQ(a.rows, 9) << a.name;
    EXPECT_EQ(a.data.size(), static_cast<size_t>(a.rows * a.cols)) << a.name;
  }
  int linear = 0;
  for (int l = 0; l < c.numLayers(); ++l) {
    const bool lin = c.layerTypes[static_cast<size_t>(l)] == LayerType::Linear;
    linear += lin;
    auto cols = [&](const char* n) {
      auto it = byName.find({n, l});
      return it == byName.end() ? int64_t{-1} : it->second->cols;
    };
    EXPECT_EQ(cols("residual_in"), c.hiddenSize) << l;
    EXPECT_EQ(cols("mlp_gate"), c.intermediateSize) << l;
    EXPECT_EQ(cols("attn_conv"), lin ? 2 * c.linearKeyDim() + c.linearValueDim() : -1) << l;
    EXPECT_EQ(cols("attn_z"), lin ? c.linearValueDim() : -1) << l;
    EXPECT_EQ(cols("attn_b"), lin ? c.linearNumValueHeads : -1) << l;
  }
  EXPECT_GT(linear, 0);
  EXPECT_LT(linear, c.numLayers());  // both layer kinds are covered
  EXPECT_EQ(t->activations.size(), static_cast<size_t>(2 * c.numLayers() + 3 * linear));
}

TEST(DecoderTap, FirstResidualIsTheTokensEmbeddingRows) {
  auto dec = Decoder::load(tiny().dir);
  ASSERT_TRUE(dec.ok());
  const std::vector<int64_t> ids = tokens(6);
  auto t = (*dec)->forwardTapped(ids);
  ASSERT_TRUE(t.ok());
  auto file = SafetensorsFile::open(tiny().dir + "/model.safetensors");
  ASSERT_TRUE(file.ok()) << file.error().str();
  const StTensorInfo* e = (*file)->header().find("model.embed_tokens.weight");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->dtype, StDtype::F32);
  auto bytes = (*file)->bytes(*e);
  const int64_t D = tiny().config.hiddenSize;
  const Activation& r0 = t->activations.front();
  ASSERT_EQ(r0.name, "residual_in");
  ASSERT_EQ(r0.layer, 0);
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t d = 0; d < D; ++d) {
      float want;
      std::memcpy(&want, bytes.data() + (static_cast<size_t>(ids[p] * D + d)) * sizeof(float), sizeof want);
      ASSERT_EQ(r0.at(static_cast<int64_t>(p), d), want) << "position " << p << " dim " << d;
    }
}

}  // namespace
}  // namespace qgpu::model
