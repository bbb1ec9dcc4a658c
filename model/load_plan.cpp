// qgpu/model/load_plan.cpp — see load_plan.h.
#include "model/load_plan.h"
#include "model/checkpoint_error.h"

#include <algorithm>
#include <cstring>

namespace qgpu::model {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

// Checks a stored tensor against the weight it feeds; the Diag names the file and both names.
Status checkTensor(const TensorSpec& spec, const CheckpointTensor& t) {
  const std::string& file = t.file->path();
  const std::string what = t.info->name == spec.name ? "tensor '" + spec.name + "'"
                                                     : "tensor '" + t.info->name + "' (used as '" + spec.name + "')";
  if (t.info->shape.size() != spec.shape.size())
    return checkpointError(file, what + " has rank " + std::to_string(t.info->shape.size()) +
                                     " (shape " + shapeText(t.info->shape) +
                                     "), config implies rank " + std::to_string(spec.shape.size()) +
                                     " " + shapeText(spec.shape));
  if (t.info->shape != spec.shape)
    return checkpointError(file, what + " has shape " + shapeText(t.info->shape) +
                                     ", config implies " + shapeText(spec.shape));
  if (!isWeightDtype(t.info->dtype))
    return checkpointError(
        file,
        what + " has dtype " + stDtypeName(t.info->dtype) +
            ", expected F32, BF16 or F16 (a float weight; transformers would not load it either)");
  return Ok{};
}

bool sameBytes(const CheckpointTensor& a, const CheckpointTensor& b) {
  if (a.info->dtype != b.info->dtype || a.info->shape != b.info->shape) return false;
  auto x = a.bytes(), y = b.bytes();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size()) == 0;
}

}  // namespace

bool isWeightDtype(StDtype dtype) {
  return dtype == StDtype::F32 || dtype == StDtype::BF16 || dtype == StDtype::F16;
}

const PlannedTensor* LoadPlan::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.spec.name == name) return &t;
  return nullptr;
}

std::vector<std::string> LoadPlan::warnings() const {
  std::vector<std::string> out;
  if (tiedHeadDiffers)
    out.push_back("config.json sets tie_word_embeddings, but the file's lm_head.weight differs from the embeddings: "
                  "using lm_head.weight, as transformers does (it does not tie two stored tensors that differ)");
  if (!ignored.empty()) {
    std::string names;
    for (const auto& n : ignored) names += (names.empty() ? "" : ", ") + n;
    out.push_back("ignoring " + std::to_string(ignored.size()) + " tensor" + (ignored.size() == 1 ? "" : "s") +
                  " the model does not use (transformers reports them as unexpected and ignores them too): " + names);
  }
  return out;
}

Expected<LoadPlan> planLoad(const std::string& dir) {
  QGPU_TRY(config, readConfig(dir));
  QGPU_TRY(ckpt, Checkpoint::open(dir));
  LoadPlan plan{config, std::move(ckpt), {}, false, false, {}};
  const Checkpoint& c = plan.checkpoint;
  const std::string embedName = config.prefix() + "embed_tokens.weight";
  const std::string headName = "lm_head.weight";
  const bool headStored = c.contains(headName);

  for (const TensorSpec& spec : languageTensors(config)) {
    std::string from = spec.name;
    // Tied and only the head stored: transformers ties the other way round.
    if (spec.name == embedName && config.tieWordEmbeddings && !c.contains(embedName) && headStored) from = headName;
    if (!c.contains(from)) {
      const std::string why = spec.name == headName
                                  ? " (config.json sets tie_word_embeddings false; transformers would initialise the "
                                    "head randomly, qgpu refuses)"
                                  : "";
      return checkpointError(dir,
                             "missing tensor '" + spec.name + "' (implied by config.json)" + why);
    }
    QGPU_TRY(t, c.get(from));
    QGPU_CHECK(checkTensor(spec, t));
    plan.tensors.push_back({spec, t});
  }
  const bool embedFromHead = plan.find(embedName)->source.info->name == headName;
  if (config.tieWordEmbeddings && headStored && !embedFromHead) {
    QGPU_TRY(head, c.get(headName));
    TensorSpec spec{headName, {config.vocabSize, config.hiddenSize}, TensorRole::Embedding};
    QGPU_CHECK(checkTensor(spec, head));
    const PlannedTensor* embed = plan.find(embedName);
    plan.tiedHeadDiffers = !sameBytes(embed->source, head);
    plan.tensors.push_back({spec, head});
  }
  plan.headFromFile = plan.find(headName) != nullptr;

  for (const std::string& name : c.names()) {
    bool used = std::any_of(plan.tensors.begin(), plan.tensors.end(),
                            [&](const PlannedTensor& t) { return t.source.info->name == name; });
    if (used || name.rfind("mtp.", 0) == 0 || name.rfind("model.visual.", 0) == 0) continue;
    plan.ignored.push_back(name);
  }
  return plan;
}

uint64_t countNonFinite(const CheckpointTensor& tensor) {
  auto bytes = tensor.bytes();
  uint64_t n = 0;
  // All-ones exponent means NaN or Inf in each format.
  auto count = [&](size_t width, uint32_t mask) {
    for (size_t i = 0; i + width <= bytes.size(); i += width) {
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + i, width);  // little-endian host, as the file
      n += (v & mask) == mask;
    }
  };
  switch (tensor.info->dtype) {
    case StDtype::F32: count(4, 0x7f800000u); break;
    case StDtype::BF16: count(2, 0x7f80u); break;
    case StDtype::F16: count(2, 0x7c00u); break;
    default: break;
  }
  return n;
}

}  // namespace qgpu::model
