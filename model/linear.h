// qgpu/model/linear.h — y = x·Wᵀ for the decoder's projections, with W held in the cheapest of
// three forms its zeros allow. Internal to qgpu_model's LibTorch translation units (it includes
// LibTorch; model/decoder.h does not).
//
//   Dense   W as stored: F::linear, the BLAS.
//   Block   every nonzero lies in a block of at most half of W (whole rows and columns zero): the
//           product reads x's block columns and writes the block rows; the other outputs are 0.
//   Sparse  at most 1/32 of W is nonzero, on the CPU: W's nonzero rows as compressed rows (CSR,
//           fp32); each output is the fp32 sum of its row's products in column order, rounded
//           once to the compute dtype (as LibTorch's bf16 GEMM accumulates in fp32 and rounds
//           once).
//
// A trained model's weights are dense; a compiled circuit's are mostly exact zeros (every layer
// is as wide as its widest, DeltaNet projections one-hot decoders): there Block and Sparse cut
// the weights held and the work per token by orders of magnitude. Exact: every skipped term is a
// product with an exact 0 (NaN and Inf are nonzero, so they are kept); only the order in which the
// kept terms are summed may differ from the BLAS's, as it differs between BLAS builds.
//
// One pass over W decides the form (`scan`): W is read as stored (F32, BF16 or F16), its zeros
// found by their bit patterns (±0: every bit but the sign clear).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace qgpu::model {

class Linear {
 public:
  enum class Form : uint8_t { Dense, Block, Sparse };

  Linear() = default;
  // W [out, in] as stored, contiguous, on the CPU. With `compact` false, or when its zeros allow
  // neither, Dense; Sparse only with `sparseAllowed` (the product runs on the CPU). A Dense or
  // Block weight is left in W's dtype (weight(): the caller converts it with setWeight); a Sparse
  // one is fp32.
  static Linear make(const torch::Tensor& w, bool compact, bool sparseAllowed);

  Form form() const { return form_; }
  // The dense matrix or the block (Dense, Block); the nonzero values in row-major order (Sparse).
  const torch::Tensor& weight() const { return weight_; }
  // Replaces the dense matrix or the block (converted to the compute dtype, moved to the device);
  // a Block's indices follow it to its device.
  void setWeight(torch::Tensor w);

  torch::Tensor operator()(const torch::Tensor& x) const;

  // Whether output r can be nonzero: false only for a row of W found all zeros when the form was
  // chosen (then y_r is an exact 0 for every finite x); true for every row of an unscanned W.
  bool rowMayBeNonzero(int64_t r) const {
    return rowUsed_.empty() || rowUsed_[static_cast<size_t>(r)] != 0;
  }
  // W was scanned and holds no nonzero: y is exactly 0 whatever x is (the Block and Sparse forms
  // multiply nothing), so a caller may skip computing x.
  bool isZero() const { return zero_; }

 private:
  torch::Tensor sparseProduct(const torch::Tensor& x) const;

  Form form_ = Form::Dense;
  int64_t out_ = 0, in_ = 0;
  torch::Tensor weight_;
  torch::Tensor rows_, cols_;  // Block: kLong indices of the block's rows and columns
  torch::Tensor rowStart_;     // Sparse: kLong [out + 1], row r's values at [rowStart[r], rowStart[r + 1])
  torch::Tensor column_;       // Sparse: kInt, each value's column
  std::vector<uint8_t> rowUsed_;   // the scan's rows with a nonzero; empty when W was not scanned
  std::vector<int64_t> usedRows_;  // Sparse: the rows with a nonzero, the only ones multiplied
  bool zero_ = false;              // scanned, and no entry is nonzero (isZero)
};

}  // namespace qgpu::model
