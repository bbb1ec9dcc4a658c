// qgpu/circuit/weights.cpp — see weights.h.
#include "circuit/weights.h"

#include <cstring>

#include "model/safetensors.h"
#include "model/tiny.h"

namespace qgpu::circuit {

Expected<Field> FieldAllocator::take(const std::string& name, int dims) {
  if (dims <= 0 || next_ + dims > hidden_)
    return makeDiag(ErrorKind::OverLimit, "residual field '" + name + "' needs " +
                                              std::to_string(dims) + " dims, " +
                                              std::to_string(hidden_ - next_) + " of " +
                                              std::to_string(hidden_) + " are left");
  Field f{name, next_, dims};
  next_ += dims;
  return f;
}

CircuitWeights::CircuitWeights(model::Qwen35Config config, WeightStorage storage)
    : config_(std::move(config)), storage_(storage) {
  for (const model::TensorSpec& spec : model::languageTensors(config_)) {
    int64_t numel = 1;
    for (int64_t d : spec.shape) numel *= d;
    if (storage_ == WeightStorage::CountOnly) numel = 0;
    order_.push_back(spec.name);
    tensors_[spec.name] = Tensor{spec.shape, std::vector<float>(static_cast<size_t>(numel), 0.0f)};
  }
}

std::string CircuitWeights::layerTensor(int layer, const std::string& suffix) const {
  return config_.prefix() + "layers." + std::to_string(layer) + "." + suffix;
}

std::string CircuitWeights::globalTensor(const std::string& suffix) const {
  return suffix == "lm_head.weight" ? suffix : config_.prefix() + suffix;
}

Expected<float*> CircuitWeights::element(const std::string& name, int64_t row, int64_t col) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return makeDiag(ErrorKind::Usage, "no tensor '" + name + "' in this config");
  const auto& shape = it->second.shape;
  // conv1d is [C, 1, K]: (channel, tap) addresses it as a [C, K] matrix.
  const int64_t rows = shape[0];
  const int64_t cols = shape.size() == 1 ? 1 : shape.back();
  if (row < 0 || row >= rows || col < 0 || col >= cols)
    return makeDiag(ErrorKind::Usage, "index (" + std::to_string(row) + ", " + std::to_string(col) +
                                          ") is outside tensor '" + name + "' [" +
                                          std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (storage_ == WeightStorage::CountOnly) {
    scratch_ = 0;
    return &scratch_;
  }
  return &it->second.data[static_cast<size_t>(row * cols + col)];
}

Status CircuitWeights::set(const std::string& name, int64_t row, int64_t col, float value) {
  QGPU_TRY(p, element(name, row, col));
  *p = value;
  return Ok{};
}

Expected<float> CircuitWeights::get(const std::string& name, int64_t row, int64_t col) const {
  QGPU_TRY(p, const_cast<CircuitWeights*>(this)->element(name, row, col));
  return *p;
}

Status CircuitWeights::fill(const std::string& name, float value) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return makeDiag(ErrorKind::Usage, "no tensor '" + name + "' in this config");
  for (float& x : it->second.data) x = value;
  return Ok{};
}

Status CircuitWeights::checkBf16Exact() const {
  for (const std::string& name : order_) {
    const Tensor& t = tensors_.at(name);
    for (size_t i = 0; i < t.data.size(); ++i) {
      const float back = model::bf16ToFloat(model::floatToBf16(t.data[i]));
      if (std::memcmp(&back, &t.data[i], sizeof(float)) != 0)
        return makeDiag(ErrorKind::Internal,
                        "weight " + name + "[" + std::to_string(i) +
                            "] = " + std::to_string(t.data[i]) +
                            " is not bf16-representable (rule R4 of docs/circuit.md)");
    }
  }
  return Ok{};
}

Status CircuitWeights::write(const std::string& dir) const {
  if (storage_ == WeightStorage::CountOnly)
    return makeDiag(ErrorKind::Usage, "a count-only CircuitWeights has no weights to write");
  std::vector<model::StTensorWrite> out;
  for (const std::string& name : order_) {
    const Tensor& t = tensors_.at(name);
    model::StTensorWrite w;
    w.name = name;
    w.dtype = model::StDtype::F32;
    w.shape = t.shape;
    w.view = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data.data()),
                                      t.data.size() * sizeof(float));  // no second copy
    out.push_back(std::move(w));
  }
  model::Qwen35Config config = config_;
  config.dtype = "float32";
  QGPU_CHECK(model::writeCheckpointTensors(dir, out, UINT64_MAX, {{"format", "pt"}}));
  return model::writeConfig(dir, config);
}

}  // namespace qgpu::circuit
