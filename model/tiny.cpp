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

uint16_t floatToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u | (mant >> 13) : 0u));
  const int32_t e = static_cast<int32_t>(exp) - 127 + 15;  // the binary16 biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // too large: infinity
  // Round to nearest even on the bits shifted out; a carry may run into the exponent (and up to
  // infinity), which is the correctly rounded result.
  auto round = [](uint32_t value, uint32_t shift) {
    uint32_t kept = value >> shift, rest = value & ((1u << shift) - 1), half = 1u << (shift - 1);
    return kept + (rest > half || (rest == half && (kept & 1u)) ? 1u : 0u);
  };
  if (e <= 0) {  // a binary16 subnormal: significand * 2^(e - 14) in units of 2^-24
    if (e < -10) return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | round(mant | 0x800000u, static_cast<uint32_t>(14 - e)));
  }
  return static_cast<uint16_t>(sign | round((static_cast<uint32_t>(e) << 23) | mant, 13));
}

float f16ToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);
  else if (exp != 0) x = sign | ((exp + 112) << 23) | (mant << 13);
  else {
    const float v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
    return sign != 0 ? -v : v;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
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
      if (w.dtype == StDtype::BF16 || w.dtype == StDtype::F16) {
        uint16_t b = w.dtype == StDtype::BF16 ? floatToBf16(v) : floatToF16(v);
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
  if (spec.storage != StDtype::F32 && spec.storage != StDtype::BF16 && spec.storage != StDtype::F16)
    return makeDiag(ErrorKind::Usage, std::string("tiny checkpoints store F32, BF16 or F16, not ") +
                                          stDtypeName(spec.storage), SourceLoc{dir});
  config.dtype = spec.storage == StDtype::BF16 ? "bfloat16" : spec.storage == StDtype::F16 ? "float16" : "float32";
  QGPU_CHECK(writeCheckpointTensors(dir, tinyTensors(TinySpec{config, spec.seed, spec.storage, spec.maxShardBytes}),
                                    spec.maxShardBytes, {{"format", "pt"}}));
  return writeConfig(dir, config);
}

}  // namespace qgpu::model
