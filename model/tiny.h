// qgpu/model/tiny.h — seeded random Qwen3.5 checkpoints of any shape (torch-free).
//
// `generateTinyCheckpoint` writes DIR/config.json and the safetensors file(s) of a random model in
// exactly the Hugging Face format (so transformers' Qwen3_5ForCausalLM loads it unchanged). The
// values depend only on (config, seed): a SplitMix64 stream per tensor, keyed by the seed and the
// tensor's name, so the output is identical on every platform and compiler, and adding a tensor
// does not shift the others. Initialisation is chosen so every mechanism is visible in the logits:
// zero-centred norm weights are N(0, 0.1)-ish (not 0, so that forgetting "1 +" shows), A_log gives
// decays in (0.05, 1) per step scale (so the recurrent state carries information across tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/diag.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace qgpu::model {

struct TinySpec {
  Qwen35Config config;
  uint64_t seed = 1;
  // BF16 (or F16) stores every tensor as BF16 (F16) except A_log and the gated-norm weight (F32),
  // like the official checkpoints; F32 stores everything as F32.
  StDtype storage = StDtype::F32;
  uint64_t maxShardBytes = UINT64_MAX;  // smaller values produce a sharded checkpoint
};

// A small config with both layer types: `layers` layers, full attention where (i+1) % 4 == 0
// unless `layerTypes` is given. Heads and widths are scaled down but keep every ratio that matters
// (GQA, Hv > Hk allowed, partial rotary).
Qwen35Config tinyConfig(int64_t hidden = 64, int64_t layers = 4, int64_t vocab = 256);

// The tensors of a random checkpoint (names, shapes, storage dtype, bytes).
std::vector<StTensorWrite> tinyTensors(const TinySpec& spec);

Status generateTinyCheckpoint(const std::string& dir, const TinySpec& spec);

// Float ↔ bfloat16 and IEEE binary16 (round to nearest even, overflow to infinity, subnormals
// kept; NaN stays NaN). The reverse conversions are exact.
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToF16(float f);
float f16ToFloat(uint16_t h);

}  // namespace qgpu::model
