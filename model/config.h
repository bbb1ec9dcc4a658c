// qgpu/model/config.h — the Qwen3.5 text configuration and its HF `config.json` form (torch-free).
//
// Reads both layouts Hugging Face uses: the text-only `qwen3_5_text` config (as written for
// `Qwen3_5ForCausalLM`, tensors under `model.`) and the multimodal `qwen3_5` config of the official
// checkpoints (fields nested in `text_config`, tensors under `model.language_model.`). Defaults and
// derivations follow transformers' `Qwen3_5TextConfig` (qwen35-spec.md §1): `layer_types` from
// `full_attention_interval` when absent, `partial_rotary_factor` 0.25, top-level
// `tie_word_embeddings` wins over the nested one for the multimodal layout, as in HF.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::model {

enum class LayerType : uint8_t {
  Linear,  // "linear_attention": a Gated DeltaNet layer
  Full,    // "full_attention": gated softmax attention with a KV cache
};

// Where the text decoder's tensors live in the checkpoint (and which config.json shape is written).
enum class CheckpointLayout : uint8_t {
  TextOnly,    // model_type qwen3_5_text, Qwen3_5ForCausalLM, tensors `model.*`, `lm_head.weight`
  Multimodal,  // model_type qwen3_5 with text_config, tensors `model.language_model.*`
};

struct Qwen35Config {
  int64_t vocabSize = 248320;
  int64_t hiddenSize = 4096;
  int64_t intermediateSize = 12288;
  std::vector<LayerType> layerTypes;  // its length is num_hidden_layers
  int64_t numAttentionHeads = 16;
  int64_t numKeyValueHeads = 4;
  int64_t headDim = 256;
  int64_t linearNumKeyHeads = 16;
  int64_t linearNumValueHeads = 32;
  int64_t linearKeyHeadDim = 128;
  int64_t linearValueHeadDim = 128;
  int64_t linearConvKernelDim = 4;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000000.0;
  double partialRotaryFactor = 0.25;
  bool tieWordEmbeddings = false;
  int64_t maxPositionEmbeddings = 32768;
  std::vector<int64_t> eosTokenIds;  // may be empty
  std::string dtype = "bfloat16";   // the checkpoint's declared storage dtype ("dtype"/"torch_dtype")
  CheckpointLayout layout = CheckpointLayout::TextOnly;

  int64_t numLayers() const { return static_cast<int64_t>(layerTypes.size()); }
  int64_t rotaryDim() const { return static_cast<int64_t>(static_cast<double>(headDim) * partialRotaryFactor); }
  int64_t linearKeyDim() const { return linearNumKeyHeads * linearKeyHeadDim; }
  int64_t linearValueDim() const { return linearNumValueHeads * linearValueHeadDim; }
  int64_t convDim() const { return 2 * linearKeyDim() + linearValueDim(); }
  // Tensor name prefix of the text decoder: "model." or "model.language_model.".
  std::string prefix() const;
  // Number of language-model parameters, embeddings included (lm_head only when untied).
  int64_t parameterCount() const;
  // Checks the invariants the decoder relies on (divisibility, rotary dim even, ...).
  Status validate(const std::string& fileName) const;
};

const char* layerTypeName(LayerType type);

// How a tensor is used, which decides how the tiny-checkpoint generator initialises it and which
// storage dtype the official checkpoints give it.
enum class TensorRole : uint8_t {
  Embedding,     // embed_tokens / lm_head rows
  Linear,        // a projection [out, in] (y = x W^T)
  CenteredNorm,  // zero-centred RMSNorm weight, applied as (1 + w)
  GatedNorm,     // GDN output norm weight, applied as is (stored F32 in official checkpoints)
  Conv,          // depthwise causal conv weight [C, 1, K]
  DtBias,        // GDN dt_bias [Hv]
  ALog,          // GDN A_log [Hv] (stored F32 in official checkpoints)
};

struct TensorSpec {
  std::string name;  // full name, with the layout's prefix
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::Linear;
};

// Every language-model tensor a checkpoint of this config holds, in a fixed order: the one table
// that the loader checks against and the generator writes (qwen35-spec.md §2).
std::vector<TensorSpec> languageTensors(const Qwen35Config& config);

Expected<Qwen35Config> parseConfigJson(std::string_view text, const std::string& fileName);
Expected<Qwen35Config> readConfig(const std::string& dir);  // DIR/config.json
std::string configToJson(const Qwen35Config& config);       // in `config.layout`
Status writeConfig(const std::string& dir, const Qwen35Config& config);

// The Qwen3.5-2B text configuration (qwen35-spec.md §1), used by the benchmarks.
Qwen35Config qwen35_2bConfig();

}  // namespace qgpu::model
