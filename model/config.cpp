// qgpu/model/config.cpp — see config.h.
#include "model/config.h"
#include "model/checkpoint_error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "model/json_text.h"
#include "model/safetensors.h"

namespace qgpu::model {
namespace {

using nlohmann::json;

// Reads an optional integer field; a present field of the wrong type is an error.
Status readInt(const json& obj, const char* key, int64_t& out, const std::string& file) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Ok{};
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    return checkpointError(
        file, std::string("config field '") + key + "' is not an integer in the int64 range");
  out = it->get<int64_t>();
  return Ok{};
}

Status readDouble(const json& obj, const char* key, double& out, const std::string& file) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Ok{};
  if (!it->is_number())
    return checkpointError(file, std::string("config field '") + key + "' is not a number");
  out = it->get<double>();
  return Ok{};
}

// The integer fields of config.json that the config holds, with the range each must lie in: the one
// table that parsing reads and validate() checks. The upper bounds are far above any released
// Qwen3.5 (2B: vocab 248320, hidden 2048) and keep every product of two or three of them, and
// parameterCount(), inside int64.
struct IntField {
  const char* key;
  int64_t Qwen35Config::*member;
  int64_t max;
};

constexpr IntField kIntFields[] = {
    {"vocab_size", &Qwen35Config::vocabSize, int64_t{1} << 22},
    {"hidden_size", &Qwen35Config::hiddenSize, int64_t{1} << 16},
    {"intermediate_size", &Qwen35Config::intermediateSize, int64_t{1} << 18},
    {"num_attention_heads", &Qwen35Config::numAttentionHeads, 1024},
    {"num_key_value_heads", &Qwen35Config::numKeyValueHeads, 1024},
    {"head_dim", &Qwen35Config::headDim, 4096},
    {"linear_num_key_heads", &Qwen35Config::linearNumKeyHeads, 1024},
    {"linear_num_value_heads", &Qwen35Config::linearNumValueHeads, 1024},
    {"linear_key_head_dim", &Qwen35Config::linearKeyHeadDim, 4096},
    {"linear_value_head_dim", &Qwen35Config::linearValueHeadDim, 4096},
    {"linear_conv_kernel_dim", &Qwen35Config::linearConvKernelDim, 64},
    {"max_position_embeddings", &Qwen35Config::maxPositionEmbeddings, int64_t{1} << 31},
};

constexpr int64_t kMaxLayers = 4096;

}  // namespace

const char* layerTypeName(LayerType type) {
  return type == LayerType::Linear ? "linear_attention" : "full_attention";
}

std::string Qwen35Config::prefix() const {
  return layout == CheckpointLayout::Multimodal ? "model.language_model." : "model.";
}

int64_t Qwen35Config::parameterCount() const {
  const int64_t D = hiddenSize;
  int64_t n = vocabSize * D + D;  // embeddings + final norm
  if (!tieWordEmbeddings) n += vocabSize * D;
  for (LayerType t : layerTypes) {
    n += 2 * D + 3 * D * intermediateSize;  // two norms + SwiGLU
    if (t == LayerType::Linear) {
      n += convDim() * D + linearValueDim() * D + 2 * linearNumValueHeads * D;  // qkv, z, b, a
      n += convDim() * linearConvKernelDim + 2 * linearNumValueHeads + linearValueHeadDim;
      n += D * linearValueDim();  // out_proj
    } else {
      n += 2 * numAttentionHeads * headDim * D + 2 * numKeyValueHeads * headDim * D;
      n += numAttentionHeads * headDim * D + 2 * headDim;  // o_proj, q/k norms
    }
  }
  return n;
}

Status Qwen35Config::validate(const std::string& file) const {
  for (const IntField& f : kIntFields) {
    const int64_t v = this->*f.member;
    if (v < 1 || v > f.max)
      return checkpointError(file, std::string("config field '") + f.key + "' is " +
                                       std::to_string(v) + ", outside [1, " +
                                       std::to_string(f.max) + "]");
  }
  if (numLayers() > kMaxLayers)
    return checkpointError(file, "config has " + std::to_string(numLayers()) + " layers, over " +
                                     std::to_string(kMaxLayers));
  if (!std::isfinite(partialRotaryFactor) || !(partialRotaryFactor > 0) || partialRotaryFactor > 1)
    return checkpointError(file, "partial_rotary_factor must lie in (0, 1]");
  if (!std::isfinite(ropeTheta) || !(ropeTheta > 0))
    return checkpointError(file, "rope_theta must be positive and finite");
  if (!std::isfinite(rmsNormEps) || !(rmsNormEps > 0) || rmsNormEps >= 1)
    return checkpointError(file, "rms_norm_eps must lie in (0, 1)");
  if (layerTypes.empty()) return checkpointError(file, "config has no layers");
  if (numAttentionHeads % numKeyValueHeads != 0)
    return checkpointError(file, "num_attention_heads is not a multiple of num_key_value_heads");
  if (linearNumValueHeads % linearNumKeyHeads != 0)
    return checkpointError(file,
                           "linear_num_value_heads is not a multiple of linear_num_key_heads");
  if (rotaryDim() % 2 != 0 || rotaryDim() > headDim || rotaryDim() < 0)
    return checkpointError(file,
                           "head_dim * partial_rotary_factor must be even and at most head_dim");
  return Ok{};
}

Expected<Qwen35Config> parseConfigJson(std::string_view text, const std::string& file) {
  QGPU_TRY(doc, parseJsonText(text, file, ErrorKind::Checkpoint));
  if (!doc.is_object()) return checkpointError(file, "config.json is not a JSON object");
  Qwen35Config c;
  const std::string modelType = doc.value("model_type", std::string());
  const json* t = &doc;
  if (modelType == "qwen3_5") {
    if (!doc.contains("text_config") || !doc["text_config"].is_object())
      return checkpointError(file, "qwen3_5 config without a text_config object");
    t = &doc["text_config"];
    c.layout = CheckpointLayout::Multimodal;
  } else if (modelType != "qwen3_5_text") {
    return checkpointError(file, "model_type '" + modelType + "' is not qwen3_5 or qwen3_5_text");
  }
  int64_t numLayers = 32, interval = 4;
  for (const IntField& f : kIntFields) QGPU_CHECK(readInt(*t, f.key, c.*f.member, file));
  QGPU_CHECK(readInt(*t, "num_hidden_layers", numLayers, file));
  QGPU_CHECK(readInt(*t, "full_attention_interval", interval, file));
  QGPU_CHECK(readDouble(*t, "rms_norm_eps", c.rmsNormEps, file));
  if (numLayers <= 0 || numLayers > kMaxLayers)
    return checkpointError(file, "config field 'num_hidden_layers' is " +
                                     std::to_string(numLayers) + ", outside [1, " +
                                     std::to_string(kMaxLayers) + "]");
  if (interval <= 0 || interval > kMaxLayers)
    return checkpointError(file, "config field 'full_attention_interval' is " +
                                     std::to_string(interval) + ", outside [1, " +
                                     std::to_string(kMaxLayers) + "]");

  // RoPE: `rope_parameters` (transformers 5) or the older flat `rope_theta`.
  QGPU_CHECK(readDouble(*t, "rope_theta", c.ropeTheta, file));
  QGPU_CHECK(readDouble(*t, "partial_rotary_factor", c.partialRotaryFactor, file));
  if (auto rp = t->find("rope_parameters"); rp != t->end() && rp->is_object()) {
    QGPU_CHECK(readDouble(*rp, "rope_theta", c.ropeTheta, file));
    QGPU_CHECK(readDouble(*rp, "partial_rotary_factor", c.partialRotaryFactor, file));
    std::string ropeType = rp->value("rope_type", std::string("default"));
    if (ropeType != "default")
      return checkpointError(file, "rope_type '" + ropeType + "' is not supported");
  }

  if (auto lt = t->find("layer_types"); lt != t->end() && !lt->is_null()) {
    if (!lt->is_array()) return checkpointError(file, "layer_types is not a list");
    for (const auto& v : *lt) {
      std::string s = v.is_string() ? v.get<std::string>() : std::string();
      if (s == "linear_attention") c.layerTypes.push_back(LayerType::Linear);
      else if (s == "full_attention") c.layerTypes.push_back(LayerType::Full);
      else
        return checkpointError(
            file, "layer_types entry '" + v.dump() + "' is not linear_attention or full_attention");
    }
    if (static_cast<int64_t>(c.layerTypes.size()) != numLayers)
      return checkpointError(file, "layer_types has " + std::to_string(c.layerTypes.size()) +
                                       " entries but num_hidden_layers is " +
                                       std::to_string(numLayers));
  } else {
    for (int64_t i = 0; i < numLayers; ++i)
      c.layerTypes.push_back((i + 1) % interval != 0 ? LayerType::Linear : LayerType::Full);
  }

  auto readBool = [&](const json& obj, const char* key, bool& out) -> Status {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Ok{};
    if (!it->is_boolean())
      return checkpointError(file, std::string("config field '") + key + "' is not a boolean");
    out = it->get<bool>();
    return Ok{};
  };
  QGPU_CHECK(readBool(*t, "tie_word_embeddings", c.tieWordEmbeddings));
  if (t != &doc) QGPU_CHECK(readBool(doc, "tie_word_embeddings", c.tieWordEmbeddings));

  if (auto eos = t->find("eos_token_id"); eos != t->end()) {
    if (eos->is_number_integer()) c.eosTokenIds.push_back(eos->get<int64_t>());
    else if (eos->is_array())
      for (const auto& e : *eos)
        if (e.is_number_integer()) c.eosTokenIds.push_back(e.get<int64_t>());
  }
  for (const char* key : {"dtype", "torch_dtype"}) {
    if (t->contains(key) && (*t)[key].is_string()) { c.dtype = (*t)[key].get<std::string>(); break; }
    if (doc.contains(key) && doc[key].is_string()) { c.dtype = doc[key].get<std::string>(); break; }
  }
  QGPU_CHECK(c.validate(file));
  return c;
}

Expected<Qwen35Config> readConfig(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  QGPU_TRY(text, readTextFile(path));
  return parseConfigJson(text, path);
}

std::string configToJson(const Qwen35Config& c) {
  nlohmann::ordered_json t;
  std::vector<std::string> types;
  for (LayerType lt : c.layerTypes) types.push_back(layerTypeName(lt));
  t["model_type"] = "qwen3_5_text";
  t["vocab_size"] = c.vocabSize;
  t["hidden_size"] = c.hiddenSize;
  t["intermediate_size"] = c.intermediateSize;
  t["num_hidden_layers"] = c.numLayers();
  t["layer_types"] = types;
  t["num_attention_heads"] = c.numAttentionHeads;
  t["num_key_value_heads"] = c.numKeyValueHeads;
  t["head_dim"] = c.headDim;
  t["linear_num_key_heads"] = c.linearNumKeyHeads;
  t["linear_num_value_heads"] = c.linearNumValueHeads;
  t["linear_key_head_dim"] = c.linearKeyHeadDim;
  t["linear_value_head_dim"] = c.linearValueHeadDim;
  t["linear_conv_kernel_dim"] = c.linearConvKernelDim;
  t["hidden_act"] = "silu";
  t["rms_norm_eps"] = c.rmsNormEps;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", c.ropeTheta},
                          {"partial_rotary_factor", c.partialRotaryFactor},
                          {"mrope_section", {11, 11, 10}},
                          {"mrope_interleaved", true}};
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["max_position_embeddings"] = c.maxPositionEmbeddings;
  t["tie_word_embeddings"] = c.tieWordEmbeddings;
  if (c.eosTokenIds.size() == 1) t["eos_token_id"] = c.eosTokenIds[0];
  else if (!c.eosTokenIds.empty()) t["eos_token_id"] = c.eosTokenIds;
  t["dtype"] = c.dtype;
  if (c.layout == CheckpointLayout::TextOnly) {
    nlohmann::ordered_json doc;
    doc["architectures"] = {"Qwen3_5ForCausalLM"};
    for (auto it = t.begin(); it != t.end(); ++it) doc[it.key()] = it.value();
    return doc.dump(2) + "\n";
  }
  nlohmann::ordered_json doc;
  doc["architectures"] = {"Qwen3_5ForConditionalGeneration"};
  doc["model_type"] = "qwen3_5";
  doc["tie_word_embeddings"] = c.tieWordEmbeddings;
  doc["text_config"] = t;
  return doc.dump(2) + "\n";
}

Status writeConfig(const std::string& dir, const Qwen35Config& config) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return writeTextFile((std::filesystem::path(dir) / "config.json").string(), configToJson(config));
}

std::vector<TensorSpec> languageTensors(const Qwen35Config& c) {
  const std::string P = c.prefix();
  const int64_t D = c.hiddenSize;
  std::vector<TensorSpec> out;
  out.push_back({P + "embed_tokens.weight", {c.vocabSize, D}, TensorRole::Embedding});
  for (int64_t i = 0; i < c.numLayers(); ++i) {
    const std::string L = P + "layers." + std::to_string(i) + ".";
    if (c.layerTypes[static_cast<size_t>(i)] == LayerType::Linear) {
      const std::string A = L + "linear_attn.";
      out.push_back({A + "in_proj_qkv.weight", {c.convDim(), D}, TensorRole::Linear});
      out.push_back({A + "in_proj_z.weight", {c.linearValueDim(), D}, TensorRole::Linear});
      out.push_back({A + "in_proj_b.weight", {c.linearNumValueHeads, D}, TensorRole::Linear});
      out.push_back({A + "in_proj_a.weight", {c.linearNumValueHeads, D}, TensorRole::Linear});
      out.push_back({A + "conv1d.weight", {c.convDim(), 1, c.linearConvKernelDim}, TensorRole::Conv});
      out.push_back({A + "dt_bias", {c.linearNumValueHeads}, TensorRole::DtBias});
      out.push_back({A + "A_log", {c.linearNumValueHeads}, TensorRole::ALog});
      out.push_back({A + "norm.weight", {c.linearValueHeadDim}, TensorRole::GatedNorm});
      out.push_back({A + "out_proj.weight", {D, c.linearValueDim()}, TensorRole::Linear});
    } else {
      const std::string A = L + "self_attn.";
      const int64_t qOut = c.numAttentionHeads * c.headDim;
      out.push_back({A + "q_proj.weight", {2 * qOut, D}, TensorRole::Linear});
      out.push_back({A + "k_proj.weight", {c.numKeyValueHeads * c.headDim, D}, TensorRole::Linear});
      out.push_back({A + "v_proj.weight", {c.numKeyValueHeads * c.headDim, D}, TensorRole::Linear});
      out.push_back({A + "o_proj.weight", {D, qOut}, TensorRole::Linear});
      out.push_back({A + "q_norm.weight", {c.headDim}, TensorRole::CenteredNorm});
      out.push_back({A + "k_norm.weight", {c.headDim}, TensorRole::CenteredNorm});
    }
    out.push_back({L + "input_layernorm.weight", {D}, TensorRole::CenteredNorm});
    out.push_back({L + "post_attention_layernorm.weight", {D}, TensorRole::CenteredNorm});
    out.push_back({L + "mlp.gate_proj.weight", {c.intermediateSize, D}, TensorRole::Linear});
    out.push_back({L + "mlp.up_proj.weight", {c.intermediateSize, D}, TensorRole::Linear});
    out.push_back({L + "mlp.down_proj.weight", {D, c.intermediateSize}, TensorRole::Linear});
  }
  out.push_back({P + "norm.weight", {D}, TensorRole::CenteredNorm});
  // The untied head sits outside the decoder prefix in both layouts.
  if (!c.tieWordEmbeddings) out.push_back({"lm_head.weight", {c.vocabSize, D}, TensorRole::Embedding});
  return out;
}

Qwen35Config qwen35_2bConfig() {
  Qwen35Config c;
  c.vocabSize = 248320;
  c.hiddenSize = 2048;
  c.intermediateSize = 6144;
  c.layerTypes.clear();
  for (int i = 0; i < 24; ++i) c.layerTypes.push_back((i + 1) % 4 ? LayerType::Linear : LayerType::Full);
  c.numAttentionHeads = 8;
  c.numKeyValueHeads = 2;
  c.headDim = 256;
  c.linearNumKeyHeads = 16;
  c.linearNumValueHeads = 16;
  c.linearKeyHeadDim = 128;
  c.linearValueHeadDim = 128;
  c.tieWordEmbeddings = true;
  c.maxPositionEmbeddings = 262144;
  c.eosTokenIds = {248044};
  c.layout = CheckpointLayout::Multimodal;
  return c;
}

}  // namespace qgpu::model
