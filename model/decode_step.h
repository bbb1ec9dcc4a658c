// qgpu/model/decode_step.h — the CPU kernels of a one-token decode step, on raw arrays: the
// gated delta rule's state update (deltaStep) and the causal conv's window update (convStep).
// Internal to qgpu_model (decoder.cpp), and tested against the tensor forms they replace
// (model/tests/decode_step_test.cpp). They exist because at one token per forward LibTorch's
// per-op cost, not arithmetic, is the decode's time: a compiled circuit's 24 layers spent most of
// a token in the state's temporaries and in the conv's cat, slice, clone and sum.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace qgpu::model {

// recurrentRule's step on fp32 arrays: S [H, dk, dv] in place, q, k [H, dk], v, out [H, dv],
// decay = exp(g), beta [H]. Per head two passes over S: S·decay and kᵀS (summed over dk in order),
// then S + k ⊗ δ and qᵀS; each product and sum rounded as the tensor ops round them.
// Only the rows `live[h]` of head h are visited (the caller's liveStateRows): every other row is an
// exact 0 from the reset on and stays one (its key channel k_i ≡ 0, or the head's values v ≡ 0, so
// that δ ≡ 0), and a zero row adds an exact 0 to kᵀS and qᵀS — skipping it changes no bit of S
// or out.
inline void deltaStep(float* s, const float* q, const float* k, const float* v, const float* decay,
                      const float* beta, float* out, const std::vector<std::vector<int32_t>>& live,
                      int64_t dk, int64_t dv) {
  std::vector<float> memory(static_cast<size_t>(dv)), deltaStore(static_cast<size_t>(dv));
  // Scalars and rows through locals and restrict pointers, so that the loops over dv vectorise
  // (the same products and sums element by element: no bit changes).
  float* __restrict mem = memory.data();
  float* __restrict delta = deltaStore.data();
  for (const auto& rows : live) {
    const float d = *decay, b = *beta;
    std::fill(mem, mem + dv, 0.0f);
    for (int32_t i : rows) {
      float* __restrict row = s + i * dv;
      const float ki = k[i];
      for (int64_t j = 0; j < dv; ++j) {
        row[j] *= d;
        mem[j] += row[j] * ki;
      }
    }
    for (int64_t j = 0; j < dv; ++j) delta[j] = (v[j] - mem[j]) * b;
    float* __restrict o = out;
    std::fill(o, o + dv, 0.0f);
    for (int32_t i : rows) {
      float* __restrict row = s + i * dv;
      const float ki = k[i], qi = q[i];
      for (int64_t j = 0; j < dv; ++j) row[j] += ki * delta[j];
      for (int64_t j = 0; j < dv; ++j) o[j] += row[j] * qi;
    }
    s += dk * dv, q += dk, k += dk, v += dv, out += dv, ++decay, ++beta;
  }
}

// causal_conv1d_update on the CPU, in place: each listed channel's window [C, K] shifts by one
// and takes x_c, and out_c = Σ_k window[c, k] · w[c, k] with every product rounded to T and the
// sum taken in fp32 from k = 0 up and rounded once — exactly what (window * w).sum(-1) computes
// with LibTorch's CPU kernels for K = 4 (products in T, sequential fp32 accumulation), without
// the cat, slice and clone of the tensor form. A channel not in `channels` is one whose input is
// an exact 0 at every token (its in_proj_qkv row is zero) and whose taps are finite: its window
// holds zeros and its output is +0 (0 + ±0 = +0), which `out` must already hold.
template <typename T>
void convStep(T* window, const T* x, const T* w, T* out, const std::vector<int32_t>& channels,
              int64_t K) {
  for (int32_t c : channels) {
    T* win = window + c * K;
    const T* tap = w + c * K;
    std::copy(win + 1, win + K, win);
    win[K - 1] = x[c];
    float sum = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      sum += static_cast<float>(
          static_cast<T>(static_cast<float>(win[k]) * static_cast<float>(tap[k])));
    out[c] = static_cast<T>(sum);
  }
}

}  // namespace qgpu::model
