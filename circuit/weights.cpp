// qgpu/circuit/weights.cpp — see weights.h.
#include "circuit/weights.h"

#include <algorithm>
#include <cstring>

#include "model/safetensors.h"
#include "model/tiny.h"

namespace qgpu::circuit {

Expected<Field> FieldAllocator::take(const std::string& name, int dims, uint32_t kinds) {
  Field f{name, span_, dims, kinds};
  if (planned()) {
    const size_t i = taken_.size();
    if (i >= plan_.size() || plan_[i].name != name || plan_[i].dims != dims)
      return makeDiag(ErrorKind::Internal,
                      "residual field '" + name + "' (" + std::to_string(dims) + " dims) is take " +
                          std::to_string(i) + " of this build, the layout plan's is " +
                          (i < plan_.size() ? "'" + plan_[i].name + "' (" +
                                                  std::to_string(plan_[i].dims) + " dims)"
                                            : "past its " + std::to_string(plan_.size()) + " fields"));
    f.offset = plan_[i].offset;
  }
  if (dims <= 0 || f.offset + dims > hidden_)
    return makeDiag(ErrorKind::OverLimit, "residual field '" + name + "' needs " +
                                              std::to_string(dims) + " dims at " +
                                              std::to_string(f.offset) + ", the hidden size is " +
                                              std::to_string(hidden_));
  span_ = std::max(span_, f.offset + dims);
  takenDims_ += dims;
  taken_.push_back(f);
  return f;
}

ResidualTouches::ResidualTouches(int hidden, int layers)
    : hidden_(hidden), layers_(layers), words_((2 * layers + 2 + 63) / 64),
      reads_(static_cast<size_t>(hidden) * static_cast<size_t>(words_), 0),
      writes_(reads_), offNorm_(static_cast<size_t>(hidden), false) {}

void ResidualTouches::mark(std::vector<uint64_t>& bits, int dim, int key) {
  const int b = key + 1;  // the embedding's −1 is bit 0
  bits[static_cast<size_t>(dim) * static_cast<size_t>(words_) + static_cast<size_t>(b / 64)] |=
      uint64_t{1} << (b % 64);
}

bool ResidualTouches::test(const std::vector<uint64_t>& bits, int dim, int key) const {
  const int b = key + 1;
  if (dim < 0 || dim >= hidden_ || b < 0 || b > lastKey() + 1) return false;
  return (bits[static_cast<size_t>(dim) * static_cast<size_t>(words_) + static_cast<size_t>(b / 64)] >>
          (b % 64)) & 1;
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
  classifyTouches();
}

// Each tensor's role by the names layerTensor / globalTensor give it (no name is parsed back).
void CircuitWeights::classifyTouches() {
  auto mark = [&](const std::string& name, Touch touch, int key) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return;  // e.g. lm_head with tied embeddings; the other layer type
    it->second.touch = touch;
    it->second.key = key;
  };
  struct Role {
    const char* suffix;
    Touch touch;
    int block;  // 0 attention, 1 MLP
  };
  static const Role kRoles[] = {
      {"linear_attn.in_proj_qkv.weight", Touch::ReadsColumns, 0},
      {"linear_attn.in_proj_z.weight", Touch::ReadsColumns, 0},
      {"linear_attn.in_proj_b.weight", Touch::ReadsColumns, 0},
      {"linear_attn.in_proj_a.weight", Touch::ReadsColumns, 0},
      {"linear_attn.out_proj.weight", Touch::WritesRows, 0},
      {"self_attn.q_proj.weight", Touch::ReadsColumns, 0},
      {"self_attn.k_proj.weight", Touch::ReadsColumns, 0},
      {"self_attn.v_proj.weight", Touch::ReadsColumns, 0},
      {"self_attn.o_proj.weight", Touch::WritesRows, 0},
      {"mlp.gate_proj.weight", Touch::ReadsColumns, 1},
      {"mlp.up_proj.weight", Touch::ReadsColumns, 1},
      {"mlp.down_proj.weight", Touch::WritesRows, 1},
  };
  for (int layer = 0; layer < config_.numLayers(); ++layer)
    for (const Role& r : kRoles) mark(layerTensor(layer, r.suffix), r.touch, 2 * layer + r.block);
  mark(globalTensor("embed_tokens.weight"), Touch::Embedding, -1);
  mark(globalTensor("lm_head.weight"), Touch::LmHead, 2 * config_.numLayers());
}

void CircuitWeights::recordTouches(float pad) {
  recording_ = true;
  pad_ = pad;
  touches_ = ResidualTouches(static_cast<int>(config_.hiddenSize), config_.numLayers());
}

void CircuitWeights::touch(const Tensor& t, int64_t row, int64_t col, float value) {
  switch (t.touch) {
    case Touch::None:
      return;
    case Touch::ReadsColumns:
    case Touch::LmHead:
      if (value != 0) touches_.read(static_cast<int>(col), t.key);
      return;
    case Touch::WritesRows:
      if (value != 0) touches_.write(static_cast<int>(row), t.key);
      return;
    case Touch::Embedding:
      if (value != pad_) touches_.write(static_cast<int>(col), t.key);
      if (value != pad_ && value != -pad_) touches_.markOffNorm(static_cast<int>(col));
      return;
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
  if (recording_) touch(tensors_.at(name), row, col, value);
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
  if (recording_ && it->second.touch != Touch::None) {
    const std::vector<int64_t>& shape = it->second.shape;
    for (int64_t r = 0; r < shape[0]; ++r)
      for (int64_t c = 0; c < (shape.size() == 1 ? 1 : shape.back()); ++c) touch(it->second, r, c, value);
  }
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
