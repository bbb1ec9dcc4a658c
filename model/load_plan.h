// qgpu/model/load_plan.h — the one validation of a checkpoint against its config (torch-free).
//
// `planLoad(dir)` reads DIR/config.json and the safetensors, and decides which stored tensor feeds
// each weight of the model, exactly as transformers' `Qwen3_5ForCausalLM.from_pretrained` would.
// `qgpu model info` and `Decoder::load` both call it, so whatever info accepts, generate loads.
//
// Rules (each follows transformers 5.x; a refusal's message says what transformers would do):
// - every tensor of `languageTensors(config)` must be present with exactly the config's shape
//   (so the rank too) and a float storage dtype: F32, BF16 or F16 (F16 is converted to the compute
//   dtype, as transformers converts it to the requested dtype);
// - `tie_word_embeddings: true` with an `lm_head.weight` in the file: the file's head is used
//   (transformers' tie_weights() does not tie two tensors that are both present and differ; when
//   they are equal it makes no difference); with only `lm_head.weight` present, it feeds the
//   embeddings too (transformers ties symmetrically);
// - any other tensor is ignored and named in a warning (transformers' "unexpected keys"), except
//   the vision tower (`model.visual.*`) and multi-token-prediction (`mtp.*`) tensors of the
//   official multimodal checkpoints, which the text model never has.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/diag.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace qgpu::model {

// Storage dtypes the decoder loads as weights.
bool isWeightDtype(StDtype dtype);

struct PlannedTensor {
  TensorSpec spec;          // the weight (name as in languageTensors, shape from the config)
  CheckpointTensor source;  // the stored tensor that feeds it (not always the same name: tying)
};

struct LoadPlan {
  Qwen35Config config;
  Checkpoint checkpoint;
  std::vector<PlannedTensor> tensors;  // languageTensors(config) order; lm_head appended when it feeds the head
  // The output head: the embeddings (tied) or a stored lm_head.weight.
  bool headFromFile = false;
  // tie_word_embeddings is true, but the file's lm_head.weight and embeddings differ (bytewise).
  bool tiedHeadDiffers = false;
  std::vector<std::string> ignored;  // stored tensors the model does not use, sorted

  // The tensor that feeds weight `name`, or nullptr.
  const PlannedTensor* find(const std::string& name) const;
  // One line per thing a user should know (ignored tensors, the head choice); empty when none.
  std::vector<std::string> warnings() const;
};

Expected<LoadPlan> planLoad(const std::string& dir);

// How many stored values of a weight tensor are NaN or ±Inf (F32/BF16/F16; 0 for other dtypes):
// one pass over the bytes, no conversion.
uint64_t countNonFinite(const CheckpointTensor& tensor);

}  // namespace qgpu::model
