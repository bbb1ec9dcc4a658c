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

  static const std::pair<const char*, Part> kParts[] = {
      {"linear_attn.in_proj_qkv.weight", Part::Qkv},
      {"linear_attn.conv1d.weight", Part::Conv},
      {"linear_attn.in_proj_z.weight", Part::Z},
      {"linear_attn.in_proj_b.weight", Part::PerHead},
      {"linear_attn.in_proj_a.weight", Part::PerHead},
      {"linear_attn.dt_bias", Part::PerHead},
      {"linear_attn.A_log", Part::PerHead},
      {"linear_attn.out_proj.weight", Part::Out},
      {"linear_attn.norm.weight", Part::LayerWide},
      {"input_layernorm.weight", Part::LayerWide},
      {"post_attention_layernorm.weight", Part::LayerWide},
      {"mlp.gate_proj.weight", Part::UnitRow},
      {"mlp.up_proj.weight", Part::UnitRow},
      {"mlp.down_proj.weight", Part::UnitCol},
  };
  for (int layer = 0; layer < config_.numLayers(); ++layer)
    for (const auto& [suffix, part] : kParts) {
      auto it = tensors_.find(layerTensor(layer, suffix));
      if (it == tensors_.end()) continue;  // the other layer type's
      it->second.layer = layer;
      it->second.part = part;
      it->second.suffix = suffix;
    }
}

int CircuitWeights::memberOf(const Tensor& t, int64_t row, int64_t col) const {
  const int64_t keyDim = config_.linearKeyDim(), dk = config_.linearKeyHeadDim,
                dv = config_.linearValueHeadDim;
  switch (t.part) {
    case Part::Qkv:
    case Part::Conv:
      if (row < keyDim) return static_cast<int>(row / dk);
      if (row < 2 * keyDim) return static_cast<int>((row - keyDim) / dk);
      return static_cast<int>((row - 2 * keyDim) / dv);
    case Part::Z:
      return static_cast<int>(row / dv);
    case Part::PerHead:
    case Part::UnitRow:
      return static_cast<int>(row);
    case Part::Out:
      return static_cast<int>(col / dv);
    case Part::UnitCol:
      return static_cast<int>(col);
    case Part::None:
    case Part::LayerWide:
      break;
  }
  return -1;
}

Status CircuitWeights::recordMembers() {
  if (packed_)
    return makeDiag(ErrorKind::Usage, "recordMembers: a packed build has its members placed");
  if (config_.linearNumKeyHeads != config_.linearNumValueHeads)
    return makeDiag(ErrorKind::Usage, "recordMembers: heads are members only with Hk = Hv");
  recordingMembers_ = true;
  members_.assign(
      static_cast<size_t>(config_.numLayers()),
      LayerMembers{std::vector<MemberDims>(static_cast<size_t>(config_.linearNumValueHeads)),
                   std::vector<MemberDims>(static_cast<size_t>(config_.intermediateSize))});
  return Ok{};
}

void CircuitWeights::noteMember(const Tensor& t, int64_t row, int64_t col) {
  if (t.part == Part::None || t.part == Part::LayerWide) return;
  LayerMembers& layer = members_[static_cast<size_t>(t.layer)];
  const bool unit = t.part == Part::UnitRow || t.part == Part::UnitCol;
  MemberDims& m = (unit ? layer.units : layer.heads)[static_cast<size_t>(memberOf(t, row, col))];
  m.used = true;
  auto note = [](std::vector<int>& dims, int64_t d) {
    if (dims.empty() || dims.back() != d) dims.push_back(static_cast<int>(d));
  };
  if (t.touch == Touch::ReadsColumns) note(m.reads, col);
  if (t.touch == Touch::WritesRows) note(m.writes, row);
}

std::vector<LayerMembers> CircuitWeights::members() const {
  std::vector<LayerMembers> out = members_;
  auto tidy = [](std::vector<int>& dims) {
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  };
  for (LayerMembers& layer : out)
    for (auto* group : {&layer.heads, &layer.units})
      for (MemberDims& m : *group) {
        tidy(m.reads);
        tidy(m.writes);
      }
  return out;
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

Expected<std::unique_ptr<CircuitWeights>> CircuitWeights::packed(model::Qwen35Config virtualConfig,
                                                                 model::Qwen35Config physical,
                                                                 LayerPacking packing,
                                                                 WeightStorage storage) {
  const model::Qwen35Config& v = virtualConfig;
  const bool agree = physical.hiddenSize == v.hiddenSize && physical.vocabSize == v.vocabSize &&
                     physical.linearKeyHeadDim == v.linearKeyHeadDim &&
                     physical.linearValueHeadDim == v.linearValueHeadDim &&
                     physical.linearConvKernelDim == v.linearConvKernelDim &&
                     physical.tieWordEmbeddings == v.tieWordEmbeddings &&
                     physical.prefix() == v.prefix();
  auto allLinear = [](const model::Qwen35Config& c) {
    return std::all_of(c.layerTypes.begin(), c.layerTypes.end(),
                       [](model::LayerType t) { return t == model::LayerType::Linear; });
  };
  if (!agree || !allLinear(v) || !allLinear(physical) ||
      v.linearNumKeyHeads != v.linearNumValueHeads ||
      physical.linearNumKeyHeads != physical.linearNumValueHeads)
    return makeDiag(ErrorKind::Usage,
                    "packed weights: the virtual and physical configs must differ only in layers, "
                    "heads and MLP width, with linear_attention layers and Hk = Hv");
  if (packing.layers != physical.numLayers() ||
      packing.heads.size() != static_cast<size_t>(v.numLayers()) ||
      packing.units.size() != packing.heads.size())
    return makeDiag(ErrorKind::Usage, "packed weights: the packing is for other configs");
  auto w = std::make_unique<CircuitWeights>(std::move(virtualConfig), WeightStorage::CountOnly);
  w->storage_ = storage;
  w->packed_ = true;
  w->physical_ = std::move(physical);
  w->packing_ = std::move(packing);
  for (const model::TensorSpec& spec : model::languageTensors(w->physical_)) {
    int64_t numel = 1;
    for (int64_t d : spec.shape) numel *= d;
    if (storage == WeightStorage::CountOnly) numel = 0;
    w->physicalIndex_[spec.name] = static_cast<int>(w->physicalOrder_.size());
    w->physicalOrder_.push_back(spec.name);
    w->physicalTensors_.push_back(
        Tensor{spec.shape, std::vector<float>(static_cast<size_t>(numel), 0.0f)});
  }
  auto find = [&](const std::string& name) {
    auto it = w->physicalIndex_.find(name);
    return it == w->physicalIndex_.end() ? -1 : it->second;
  };
  for (auto& [name, t] : w->tensors_) {
    if (t.layer < 0) {
      t.physical = {find(name)};  // a global tensor: the same name in both configs
      continue;
    }
    for (int layer = 0; layer < w->packing_.layers; ++layer)
      t.physical.push_back(
          find(w->physical_.prefix() + "layers." + std::to_string(layer) + "." + t.suffix));
  }
  return w;
}

Expected<float*> CircuitWeights::physicalElement(const Tensor& t, int64_t row, int64_t col) {
  int physicalLayer = 0;  // a global tensor's, and a layer-wide one's: layer 0 stands for every
                          // layer (setLayerWide writes them all the same)
  int64_t r = row, c = col;
  if (t.layer >= 0 && t.part != Part::LayerWide) {
    const int member = memberOf(t, row, col);
    const bool unit = t.part == Part::UnitRow || t.part == Part::UnitCol;
    const auto& slots = (unit ? packing_.units : packing_.heads)[static_cast<size_t>(t.layer)];
    const MemberSlot at = member >= 0 && member < static_cast<int>(slots.size())
                              ? slots[static_cast<size_t>(member)]
                              : MemberSlot{};
    if (at.layer < 0)
      return makeDiag(
          ErrorKind::Internal,
          "packed weights: " + std::string(unit ? "unit " : "head ") + std::to_string(member) +
              " of layer " + std::to_string(t.layer) +
              " has no place in the packing (a build other than the one it was made from)");
    physicalLayer = at.layer;
    const int64_t keyDim = config_.linearKeyDim(), dk = config_.linearKeyHeadDim,
                  dv = config_.linearValueHeadDim, physKeyDim = physical_.linearKeyDim();
    switch (t.part) {
      case Part::Qkv:
      case Part::Conv:
        if (row < keyDim)
          r = at.slot * dk + row % dk;
        else if (row < 2 * keyDim)
          r = physKeyDim + at.slot * dk + (row - keyDim) % dk;
        else
          r = 2 * physKeyDim + at.slot * dv + (row - 2 * keyDim) % dv;
        break;
      case Part::Z:
        r = at.slot * dv + row % dv;
        break;
      case Part::PerHead:
      case Part::UnitRow:
        r = at.slot;
        break;
      case Part::Out:
        c = at.slot * dv + col % dv;
        break;
      case Part::UnitCol:
        c = at.slot;
        break;
      case Part::None:
      case Part::LayerWide:
        return makeDiag(ErrorKind::Internal, "packed weights: not a member's");
    }
  }
  const int index = static_cast<size_t>(physicalLayer) < t.physical.size()
                        ? t.physical[static_cast<size_t>(physicalLayer)]
                        : -1;
  if (index < 0)
    return makeDiag(ErrorKind::Internal, "packed weights: no physical tensor for " +
                                             (t.suffix.empty() ? "a global tensor" : t.suffix) +
                                             " in layer " + std::to_string(physicalLayer));
  if (storage_ == WeightStorage::CountOnly) {
    scratch_ = 0;
    return &scratch_;
  }
  Tensor& p = physicalTensors_[static_cast<size_t>(index)];
  const int64_t cols = p.shape.size() == 1 ? 1 : p.shape.back();
  return &p.data[static_cast<size_t>(r * cols + c)];
}

Status CircuitWeights::setLayerWide(const Tensor& t, int64_t row, int64_t col, float value) {
  if (storage_ == WeightStorage::CountOnly) return Ok{};
  for (int index : t.physical) {
    if (index < 0)
      return makeDiag(ErrorKind::Internal, "packed weights: a physical layer has no " + t.suffix);
    Tensor& p = physicalTensors_[static_cast<size_t>(index)];
    float& x = p.data[static_cast<size_t>(row * (p.shape.size() == 1 ? 1 : p.shape.back()) + col)];
    if (x != 0 && x != value)
      return makeDiag(ErrorKind::Internal,
                      "packed weights: layer " + std::to_string(t.layer) + " sets " + t.suffix +
                          "[" + std::to_string(row) + "] to " + std::to_string(value) +
                          ", another layer packed with it to " + std::to_string(x));
    x = value;
  }
  return Ok{};
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
  if (packed_) return physicalElement(it->second, row, col);
  if (storage_ == WeightStorage::CountOnly) {
    scratch_ = 0;
    return &scratch_;
  }
  return &it->second.data[static_cast<size_t>(row * cols + col)];
}

Status CircuitWeights::set(const std::string& name, int64_t row, int64_t col, float value) {
  auto it = tensors_.find(name);
  if (packed_ && it != tensors_.end() && it->second.part == Part::LayerWide) {
    QGPU_CHECK(element(name, row, col));  // the bounds
    QGPU_CHECK(setLayerWide(it->second, row, col, value));
  } else {
    QGPU_TRY(p, element(name, row, col));
    *p = value;
  }
  if (recording_) touch(it->second, row, col, value);
  if (recordingMembers_ && value != 0) noteMember(it->second, row, col);
  return Ok{};
}

Expected<float> CircuitWeights::get(const std::string& name, int64_t row, int64_t col) const {
  QGPU_TRY(p, const_cast<CircuitWeights*>(this)->element(name, row, col));
  return *p;
}

Expected<float> CircuitWeights::written(const std::string& name, int64_t row, int64_t col) const {
  if (!packed_) return get(name, row, col);
  if (!physicalIndex_.count(name))
    return makeDiag(ErrorKind::Usage, "no tensor '" + name + "' in the written config");
  const Tensor& t = writtenTensor(name);
  const int64_t rows = t.shape[0];
  const int64_t cols = t.shape.size() == 1 ? 1 : t.shape.back();
  if (row < 0 || row >= rows || col < 0 || col >= cols || t.data.empty())
    return makeDiag(ErrorKind::Usage, "index (" + std::to_string(row) + ", " + std::to_string(col) +
                                          ") is outside tensor '" + name + "' or it has no data");
  return t.data[static_cast<size_t>(row * cols + col)];
}

const CircuitWeights::Tensor& CircuitWeights::writtenTensor(const std::string& name) const {
  if (!packed_) return tensors_.at(name);
  return physicalTensors_[static_cast<size_t>(physicalIndex_.at(name))];
}

Status CircuitWeights::fill(const std::string& name, float value) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return makeDiag(ErrorKind::Usage, "no tensor '" + name + "' in this config");
  if (packed_) {
    if (it->second.part != Part::LayerWide)
      return makeDiag(ErrorKind::Usage, "fill '" + name + "': a packed build fills only the norms");
    for (int64_t r = 0; r < it->second.shape[0]; ++r)
      QGPU_CHECK(setLayerWide(it->second, r, 0, value));
  }
  for (float& x : it->second.data) x = value;
  if (recordingMembers_ && value != 0 && it->second.part != Part::LayerWide) {
    const std::vector<int64_t>& shape = it->second.shape;
    for (int64_t r = 0; r < shape[0]; ++r)
      for (int64_t c = 0; c < (shape.size() == 1 ? 1 : shape.back()); ++c)
        noteMember(it->second, r, c);
  }
  if (recording_ && it->second.touch != Touch::None) {
    const std::vector<int64_t>& shape = it->second.shape;
    for (int64_t r = 0; r < shape[0]; ++r)
      for (int64_t c = 0; c < (shape.size() == 1 ? 1 : shape.back()); ++c) touch(it->second, r, c, value);
  }
  return Ok{};
}

Status CircuitWeights::checkBf16Exact() const {
  for (const std::string& name : packed_ ? physicalOrder_ : order_) {
    const Tensor& t = writtenTensor(name);
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
  for (const std::string& name : packed_ ? physicalOrder_ : order_) {
    const Tensor& t = writtenTensor(name);
    model::StTensorWrite w;
    w.name = name;
    w.dtype = model::StDtype::F32;
    w.shape = t.shape;
    w.view = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data.data()),
                                      t.data.size() * sizeof(float));  // no second copy
    out.push_back(std::move(w));
  }
  model::Qwen35Config config = writtenConfig();
  config.dtype = "float32";
  QGPU_CHECK(model::writeCheckpointTensors(dir, out, UINT64_MAX, {{"format", "pt"}}));
  return model::writeConfig(dir, config);
}

}  // namespace qgpu::circuit
