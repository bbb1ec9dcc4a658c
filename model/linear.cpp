// qgpu/model/linear.cpp — see linear.h.
#include "model/linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace qgpu::model {
namespace {

using torch::Tensor;

// Where W's nonzeros are, from one pass over it; its entries too (row-major) while there are at
// most `keepAtMost` of them.
struct Scan {
  int64_t nonzero = 0;
  std::vector<uint8_t> rowUsed, colUsed;
  bool kept = true;
  std::vector<int64_t> rowStart{0};
  std::vector<int32_t> column;
  std::vector<float> value;
};

// T: the stored element type; Bits: an unsigned integer of its width. A value is zero iff every
// bit but the sign is clear (IEEE formats: a NaN or Inf has exponent bits set). Rows are read in
// runs of 64 whose magnitudes are OR-ed first, so that the all-zero runs of a sparse W cost one
// vectorisable loop each.
template <typename T, typename Bits>
Scan scan(const T* w, int64_t rows, int64_t cols, int64_t keepAtMost) {
  static_assert(sizeof(T) == sizeof(Bits));
  constexpr Bits kMagnitude = static_cast<Bits>(static_cast<Bits>(~Bits{0}) >> 1);
  constexpr int64_t kRun = 64;
  Scan s;
  s.rowUsed.assign(static_cast<size_t>(rows), 0);
  s.colUsed.assign(static_cast<size_t>(cols), 0);
  auto bitsAt = [](const T* p) {
    Bits b;
    std::memcpy(&b, p, sizeof b);
    return static_cast<Bits>(b & kMagnitude);
  };
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = w + r * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += kRun) {
      const int64_t c1 = std::min(cols, c0 + kRun);
      Bits any = 0;
      for (int64_t c = c0; c < c1; ++c) any |= bitsAt(row + c);
      if (any == 0) continue;
      for (int64_t c = c0; c < c1; ++c) {
        if (bitsAt(row + c) == 0) continue;
        ++s.nonzero;
        s.rowUsed[static_cast<size_t>(r)] = 1;
        s.colUsed[static_cast<size_t>(c)] = 1;
        if (!s.kept) continue;
        if (s.nonzero > keepAtMost) {
          s.kept = false;
          s.rowStart = {}, s.column = {}, s.value = {};
          continue;
        }
        s.column.push_back(static_cast<int32_t>(c));
        s.value.push_back(static_cast<float>(row[c]));
      }
    }
    if (s.kept) s.rowStart.push_back(static_cast<int64_t>(s.column.size()));
  }
  return s;
}

Scan scanAny(const Tensor& w, int64_t keepAtMost) {
  const int64_t rows = w.size(0), cols = w.size(1);
  switch (w.scalar_type()) {
    case torch::kFloat32: return scan<float, uint32_t>(w.data_ptr<float>(), rows, cols, keepAtMost);
    case torch::kBFloat16:
      return scan<c10::BFloat16, uint16_t>(w.data_ptr<c10::BFloat16>(), rows, cols, keepAtMost);
    case torch::kHalf: return scan<c10::Half, uint16_t>(w.data_ptr<c10::Half>(), rows, cols, keepAtMost);
    default: TORCH_CHECK(false, "Linear::make: a float weight expected, got ", w.scalar_type());
  }
}

// The positions whose flag is set, in order.
std::vector<int64_t> usedPositions(const std::vector<uint8_t>& used) {
  std::vector<int64_t> at;
  for (size_t i = 0; i < used.size(); ++i)
    if (used[i]) at.push_back(static_cast<int64_t>(i));
  return at;
}

Tensor usedIndices(const std::vector<uint8_t>& used) {
  return torch::tensor(usedPositions(used), torch::kLong);
}

}  // namespace

Linear Linear::make(const Tensor& w, bool compact, bool sparseAllowed) {
  Linear l;
  l.weight_ = w;
  l.out_ = w.size(0);
  l.in_ = w.size(1);
  if (!compact) return l;
  TORCH_CHECK(w.is_contiguous() && w.device().is_cpu(), "Linear::make: a contiguous CPU weight expected");
  // 2^31 columns would overflow the Sparse form's int32 column index; no checkpoint comes close.
  const bool sparse = sparseAllowed && l.in_ < (int64_t{1} << 31);
  Scan s = scanAny(w, sparse ? w.numel() / 32 : -1);
  l.rowUsed_ = s.rowUsed;
  l.zero_ = s.nonzero == 0;
  if (sparse && s.kept) {
    l.form_ = Form::Sparse;
    l.rowStart_ = torch::tensor(s.rowStart, torch::kLong);
    l.usedRows_ = usedPositions(s.rowUsed);
    l.column_ = torch::tensor(s.column, torch::kInt);
    l.weight_ = torch::tensor(s.value, torch::kFloat32);
    return l;
  }
  Tensor rows = usedIndices(s.rowUsed), cols = usedIndices(s.colUsed);
  if (2 * rows.numel() * cols.numel() > w.numel()) return l;
  l.form_ = Form::Block;
  l.rows_ = rows;
  l.cols_ = cols;
  l.weight_ = w.index_select(0, rows).index_select(1, cols).contiguous();
  return l;
}

void Linear::setWeight(Tensor w) {
  weight_ = std::move(w);
  if (form_ != Form::Block) return;
  rows_ = rows_.to(weight_.device());
  cols_ = cols_.to(weight_.device());
}

Tensor Linear::operator()(const Tensor& x) const {
  if (form_ == Form::Dense) return torch::nn::functional::linear(x, weight_);
  if (form_ == Form::Sparse) return sparseProduct(x);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out_;
  Tensor y = torch::zeros(shape, x.options());
  if (rows_.numel() == 0 || cols_.numel() == 0) return y;
  return y.index_copy_(-1, rows_, torch::nn::functional::linear(x.index_select(-1, cols_), weight_));
}

Tensor Linear::sparseProduct(const Tensor& x) const {
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out_;
  const Tensor xf = x.reshape({-1, in_}).to(torch::kFloat32).contiguous();
  const int64_t positions = xf.size(0);
  Tensor y = torch::zeros({positions, out_}, xf.options());  // a row without a nonzero: y_r = 0
  const float* xs = xf.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  const int64_t* start = rowStart_.data_ptr<int64_t>();
  const int32_t* column = column_.data_ptr<int32_t>();
  const float* value = weight_.data_ptr<float>();
  for (int64_t p = 0; p < positions; ++p, xs += in_, ys += out_) {
    for (int64_t r : usedRows_) {
      float sum = 0.0f;
      for (int64_t j = start[r]; j < start[r + 1]; ++j) sum += value[j] * xs[column[j]];
      ys[r] = sum;
    }
  }
  return y.to(x.scalar_type()).reshape(shape);
}

}  // namespace qgpu::model
