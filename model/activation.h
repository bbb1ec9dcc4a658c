// qgpu/model/activation.h — one intermediate of a forward (Decoder::forwardTapped), torch-free and
// dependency-free so that code that must not link LibTorch (circuit/margins.h) can read taps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::model {

// One intermediate of a forward, named (name, layer) as llama.cpp names its tensors so that runs
// can be dumped and diffed: float32 [rows, cols], a row per position of the forward. The names
// (linear_attention layers; a full_attention layer has only the first and the last):
//   residual_in  [S, hidden]   the layer's input residual (transformers' hidden_states[layer])
//   attn_conv    [S, conv ch]  the depthwise conv's output before its SiLU (q, k, v channels)
//   attn_z       [S, value dim] in_proj_z's output: the gated norm's SiLU input
//   attn_b       [S, v heads]  in_proj_b's output: beta's sigmoid input
//   mlp_gate     [S, intermediate] gate_proj's output: the MLP's SiLU input
struct Activation {
  std::string name;
  int layer = 0;
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

}  // namespace qgpu::model
