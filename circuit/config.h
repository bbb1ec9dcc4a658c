// qgpu/circuit/config.h — the one checkpoint config a circuit starts from: the model leg's
// (circuit/leg.cpp) and every circuit test's (torch-free, so the cpu tests share it with the torch
// ones).
#pragma once

#include <cstdint>

#include "model/config.h"

namespace qgpu::circuit {

// `layers` linear_attention layers of hidden size `hidden`, one 128/128 DeltaNet head (zero until
// a gadget writes it), an MLP of `units`, a vocabulary of `vocab` rows and an untied lm_head (a
// test's probe). Callers change what they need after the call (heads, tied embeddings).
inline model::Qwen35Config linearConfig(int hidden, int layers, int64_t units, int64_t vocab) {
  model::Qwen35Config c;
  c.vocabSize = vocab;
  c.hiddenSize = hidden;
  c.intermediateSize = units;
  c.layerTypes.assign(static_cast<size_t>(layers), model::LayerType::Linear);
  c.numAttentionHeads = 1;
  c.numKeyValueHeads = 1;
  c.headDim = 8;
  c.linearNumKeyHeads = 1;
  c.linearNumValueHeads = 1;
  c.linearKeyHeadDim = 128;
  c.linearValueHeadDim = 128;
  c.linearConvKernelDim = 4;
  c.tieWordEmbeddings = false;
  c.maxPositionEmbeddings = 1 << 20;
  c.dtype = "float32";
  return c;
}

}  // namespace qgpu::circuit
