// The decode step's CPU kernels (model/decode_step.h) against the tensor forms they replace, bit
// for bit: convStep (dead channels left out) against LibTorch's cat / slice / (window * w).sum(-1)
// in fp32 and bf16; deltaStep against the rule written out element by element (its vectorised
// loops must not change a bit), and over the live rows only against over every row, on states
// whose skipped rows are the exact zeros the decoder proves them to be.
#include "model/decode_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <vector>

namespace qgpu::model {
namespace {

using torch::Tensor;
using torch::indexing::None;
using torch::indexing::Slice;

// How many elements of two same-shaped tensors differ in their bits (a NaN equals itself).
int64_t bitsDiffer(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  const auto* p = static_cast<const uint8_t*>(x.data_ptr());
  const auto* q = static_cast<const uint8_t*>(y.data_ptr());
  const int64_t size = x.element_size();
  int64_t differ = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    differ += std::memcmp(p + i * size, q + i * size, size) != 0;
  return differ;
}

// Values over many binades and both signs, so that every rounding of the products and the sum
// shows: sign · e^(4·N(0, 1)).
Tensor wideValues(std::vector<int64_t> shape, torch::ScalarType dtype) {
  Tensor magnitude = (torch::randn(shape) * 4).exp();
  return (magnitude * torch::randn(shape).sign()).to(dtype);
}

class ConvStep : public ::testing::TestWithParam<torch::ScalarType> {};

// Every third channel is dead, as the decoder lists them: its input is zero at every token (its
// window zeros from the start), so convStep leaves it out and its output keeps the +0 it was given;
// the outputs are the tensor form's bits, the live windows too.
TEST_P(ConvStep, EqualsTheTensorFormBitForBit) {
  const torch::ScalarType dtype = GetParam();
  torch::manual_seed(7);
  const int64_t C = 1000, K = 4;
  std::vector<int32_t> live;
  Tensor deadMask = torch::ones({1, C, 1});
  for (int32_t c = 0; c < C; ++c) {
    if (c % 3 == 2)
      deadMask[0][c][0] = 0;
    else
      live.push_back(c);
  }
  Tensor w = wideValues({C, K}, dtype);
  Tensor window = (wideValues({1, C, K}, torch::kFloat32) * deadMask).to(dtype);  // tensor form
  Tensor ours = window.clone();
  for (int step = 0; step < 6; ++step) {
    Tensor x = (wideValues({1, C, 1}, torch::kFloat32) * deadMask).to(dtype);
    // decoder.cpp's tensor form: causal_conv1d_update.
    window = torch::cat({window, x}, -1).index({"...", Slice(-K, None)}).clone();
    Tensor want = (window * w).sum(-1, /*keepdim=*/true);
    Tensor got = torch::zeros_like(x);
    if (dtype == torch::kFloat32)
      convStep(ours.data_ptr<float>(), x.data_ptr<float>(), w.data_ptr<float>(),
               got.data_ptr<float>(), live, K);
    else
      convStep(ours.data_ptr<c10::BFloat16>(), x.data_ptr<c10::BFloat16>(),
               w.data_ptr<c10::BFloat16>(), got.data_ptr<c10::BFloat16>(), live, K);
    // A dead channel's window is left as it was: zeros, whose signs the tensor form may flip.
    const Tensor liveAt = torch::tensor(std::vector<int64_t>(live.begin(), live.end()));
    EXPECT_EQ(bitsDiffer(ours.index_select(1, liveAt), window.index_select(1, liveAt)), 0)
        << "window, step " << step;
    EXPECT_EQ((ours.to(torch::kFloat32) * (1 - deadMask)).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(bitsDiffer(got, want), 0) << "output, step " << step;
    EXPECT_GT(got.abs().max().item<float>(), 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ConvStep, ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const auto& info) {
                           return info.param == torch::kFloat32 ? "F32" : "BF16";
                         });

// The rule written out element by element, the order deltaStep documents (per head: S·decay and
// kᵀS summed over i upward, δ, then S + k ⊗ δ and qᵀS summed over i upward), for every row.
void deltaRule(Tensor& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& decay,
               const Tensor& beta, Tensor& out) {
  const int64_t H = s.size(0), dk = s.size(1), dv = s.size(2);
  auto S = s.accessor<float, 3>();
  auto Q = q.accessor<float, 2>(), K = k.accessor<float, 2>(), V = v.accessor<float, 2>();
  auto O = out.accessor<float, 2>();
  for (int64_t h = 0; h < H; ++h) {
    std::vector<float> mem(dv, 0.0f), delta(dv);
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) {
        S[h][i][j] = S[h][i][j] * decay[h].item<float>();
        mem[j] = mem[j] + S[h][i][j] * K[h][i];
      }
    for (int64_t j = 0; j < dv; ++j) delta[j] = (V[h][j] - mem[j]) * beta[h].item<float>();
    for (int64_t j = 0; j < dv; ++j) O[h][j] = 0.0f;
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) {
        S[h][i][j] = S[h][i][j] + K[h][i] * delta[j];
        O[h][j] = O[h][j] + S[h][i][j] * Q[h][i];
      }
  }
}

TEST(DeltaStep, EqualsTheRuleElementByElement) {
  torch::manual_seed(5);
  const int64_t H = 2, dk = 8, dv = 24;
  const std::vector<std::vector<int32_t>> every(H, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor s = torch::randn({H, dk, dv}), want = s.clone();
  for (int step = 0; step < 4; ++step) {
    Tensor q = torch::randn({H, dk}), k = torch::randn({H, dk}), v = torch::randn({H, dv});
    Tensor decay = torch::rand({H}), beta = torch::rand({H});
    Tensor out = torch::empty({H, dv}), outWant = torch::empty({H, dv});
    deltaStep(s.data_ptr<float>(), q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
              decay.data_ptr<float>(), beta.data_ptr<float>(), out.data_ptr<float>(), every, dk,
              dv);
    deltaRule(want, q, k, v, decay, beta, outWant);
    EXPECT_EQ(bitsDiffer(s, want), 0) << "state, step " << step;
    EXPECT_EQ(bitsDiffer(out, outWant), 0) << "out, step " << step;
  }
}

// Three heads of dk 8, dv 16: head 0 every row live, head 1 rows {0, 2, 5} (its other key
// channels exact zeros), head 2 none (its values exact zeros). Both runs start from the zero
// state; after every step S and out must be the same bits, and the skipped rows still zero.
TEST(DeltaStep, VisitingOnlyTheLiveRowsChangesNoBit) {
  torch::manual_seed(11);
  const int64_t H = 3, dk = 8, dv = 16;
  const std::vector<std::vector<int32_t>> every(H, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::vector<std::vector<int32_t>> live = {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 2, 5}, {}};
  Tensor keyMask = torch::ones({H, dk});
  keyMask[1] = torch::zeros({dk});
  for (int64_t i : {0, 2, 5}) keyMask[1][i] = 1;
  Tensor valueMask = torch::ones({H, dv});
  valueMask[2] = torch::zeros({dv});
  Tensor sAll = torch::zeros({H, dk, dv}), sLive = torch::zeros({H, dk, dv});
  for (int step = 0; step < 8; ++step) {
    Tensor q = torch::randn({H, dk}), k = torch::randn({H, dk}) * keyMask;
    Tensor v = torch::randn({H, dv}) * valueMask;
    Tensor decay = torch::rand({H}), beta = torch::rand({H});
    Tensor outAll = torch::empty({H, dv}), outLive = torch::empty({H, dv});
    deltaStep(sAll.data_ptr<float>(), q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
              decay.data_ptr<float>(), beta.data_ptr<float>(), outAll.data_ptr<float>(), every, dk,
              dv);
    deltaStep(sLive.data_ptr<float>(), q.data_ptr<float>(), k.data_ptr<float>(),
              v.data_ptr<float>(), decay.data_ptr<float>(), beta.data_ptr<float>(),
              outLive.data_ptr<float>(), live, dk, dv);
    EXPECT_EQ(bitsDiffer(sLive, sAll), 0) << "state, step " << step;
    EXPECT_EQ(bitsDiffer(outLive, outAll), 0) << "out, step " << step;
    EXPECT_GT(sAll[0].abs().max().item<float>(), 0.0f);  // the live rows do hold something
  }
  EXPECT_EQ(sAll[2].abs().max().item<float>(), 0.0f);
  EXPECT_EQ(sAll[1][1].abs().max().item<float>(), 0.0f);
}

}  // namespace
}  // namespace qgpu::model
