// qgpu/model/tiny.cpp — see tiny.h.
#include "model/tiny.h"

#include <cmath>
#include <cstring>

namespace qgpu::model {
namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1), from the top 24 bits so that it is exact in float.
float uniformSym(uint64_t& state) {
  return static_cast<float>(static_cast<int32_t>(splitmix(state) >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}

uint64_t hashName(const std::string& name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;  // an FNV-style seeded mix (not the FNV offset basis; kept: it fixes the fixtures' weights)
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

float sample(TensorRole role, uint64_t& state, int64_t fanIn) {
  // sqrt(3) turns a [-1, 1) uniform into unit variance.
  const float unit = uniformSym(state) * 1.7320508f;
  switch (role) {
    case TensorRole::Embedding: return 0.5f * unit;
    case TensorRole::Linear: return unit / std::sqrt(static_cast<float>(fanIn));
    case TensorRole::CenteredNorm: return 0.1f * unit;
    case TensorRole::GatedNorm: return 1.0f + 0.1f * unit;
    case TensorRole::Conv: return 0.5f * unit;
    case TensorRole::DtBias: return 0.5f * unit;
    case TensorRole::ALog: {
      float a = 0.05f + 0.95f * (uniformSym(state) * 0.5f + 0.5f);  // A in [0.05, 1)
      return std::log(a);
    }
  }
  return 0.0f;
}

}  // namespace

uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

Qwen35Config tinyConfig(int64_t hidden, int64_t layers, int64_t vocab) {
  Qwen35Config c;
  c.vocabSize = vocab;
  c.hiddenSize = hidden;
  c.intermediateSize = 2 * hidden + hidden / 2;
  c.layerTypes.clear();
  for (int64_t i = 0; i < layers; ++i)
    c.layerTypes.push_back((i + 1) % 4 != 0 ? LayerType::Linear : LayerType::Full);
  c.numAttentionHeads = 4;
  c.numKeyValueHeads = 2;
  c.headDim = 32;
  c.linearNumKeyHeads = 2;
  c.linearNumValueHeads = 4;
  c.linearKeyHeadDim = 16;
  c.linearValueHeadDim = 16;
  c.linearConvKernelDim = 4;
  c.tieWordEmbeddings = true;
  c.maxPositionEmbeddings = 4096;
  c.dtype = "float32";
  c.eosTokenIds = {};
  c.layout = CheckpointLayout::TextOnly;
  return c;
}

std::vector<StTensorWrite> tinyTensors(const TinySpec& spec) {
  std::vector<StTensorWrite> out;
  for (const TensorSpec& ts : languageTensors(spec.config)) {
    StTensorWrite w;
    w.name = ts.name;
    w.shape = ts.shape;
    const bool keepF32 = ts.role == TensorRole::ALog || ts.role == TensorRole::GatedNorm;
    w.dtype = keepF32 ? StDtype::F32 : spec.storage;
    int64_t numel = 1;
    for (int64_t d : ts.shape) numel *= d;
    const int64_t fanIn = ts.shape.size() >= 2 ? ts.shape.back() : 1;
    w.data.resize(static_cast<size_t>(numel) * stDtypeSize(w.dtype));
    // Keyed by the name below the layout's prefix, so both layouts hold identical values.
    const std::string prefix = spec.config.prefix();
    const bool prefixed = ts.name.rfind(prefix, 0) == 0;
    uint64_t state = hashName(prefixed ? ts.name.substr(prefix.size()) : ts.name, spec.seed);
    for (int64_t i = 0; i < numel; ++i) {
      float v = sample(ts.role, state, fanIn);
      if (w.dtype == StDtype::BF16) {
        uint16_t b = floatToBf16(v);
        std::memcpy(w.data.data() + 2 * i, &b, 2);
      } else {
        std::memcpy(w.data.data() + 4 * i, &v, 4);
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

Status generateTinyCheckpoint(const std::string& dir, const TinySpec& spec) {
  QGPU_CHECK(spec.config.validate(dir));
  Qwen35Config config = spec.config;
  config.dtype = spec.storage == StDtype::BF16 ? "bfloat16" : "float32";
  QGPU_CHECK(writeCheckpointTensors(dir, tinyTensors(TinySpec{config, spec.seed, spec.storage, spec.maxShardBytes}),
                                    spec.maxShardBytes, {{"format", "pt"}}));
  return writeConfig(dir, config);
}

}  // namespace qgpu::model
