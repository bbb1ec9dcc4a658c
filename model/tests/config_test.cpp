// Tests of model/config.h and model/tiny.h. Expected numbers for Qwen3.5-2B come from
// qwen35-spec.md (tensor count, parameter count), not from the code under test.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "model/config.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

// The official 2B config.json, trimmed to the fields HF reads (qwen35-spec.md §1).
const char* k2BConfig = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "model_type": "qwen3_5",
  "tie_word_embeddings": true,
  "image_token_id": 248056,
  "text_config": {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 2048,
    "intermediate_size": 6144, "num_hidden_layers": 24, "full_attention_interval": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "hidden_act": "silu",
    "rms_norm_eps": 1e-6, "max_position_embeddings": 262144, "eos_token_id": 248044,
    "attn_output_gate": true, "mamba_ssm_dtype": "float32", "mtp_num_hidden_layers": 1,
    "dtype": "bfloat16",
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": true}
  },
  "vision_config": {"depth": 24}
})";

TEST(Qwen35Config, ParsesOfficialMultimodal2BConfig) {
  auto c = parseConfigJson(k2BConfig, "config.json");
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_EQ(c->layout, CheckpointLayout::Multimodal);
  EXPECT_EQ(c->prefix(), "model.language_model.");
  EXPECT_EQ(c->hiddenSize, 2048);
  EXPECT_EQ(c->numLayers(), 24);
  EXPECT_TRUE(c->tieWordEmbeddings);
  EXPECT_EQ(c->rotaryDim(), 64);
  EXPECT_EQ(c->ropeTheta, 1e7);
  EXPECT_EQ(c->eosTokenIds, std::vector<int64_t>{248044});
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(c->layerTypes[static_cast<size_t>(i)], i % 4 == 3 ? LayerType::Full : LayerType::Linear) << i;
  // qwen35-spec.md §2: 320 language tensors, 1,881,825,088 language parameters.
  EXPECT_EQ(languageTensors(*c).size(), 320u);
  EXPECT_EQ(c->parameterCount(), 1881825088);
  int64_t fromTable = 0;
  for (const auto& t : languageTensors(*c)) {
    int64_t n = 1;
    for (auto d : t.shape) n *= d;
    fromTable += n;
  }
  EXPECT_EQ(fromTable, c->parameterCount());
}

TEST(Qwen35Config, Builtin2BConfigMatchesOfficial) {
  auto official = parseConfigJson(k2BConfig, "config.json");
  ASSERT_TRUE(official.ok());
  EXPECT_EQ(configToJson(qwen35_2bConfig()), configToJson(*official));
}

TEST(Qwen35Config, DerivesLayerTypesFromIntervalWhenAbsent) {
  auto c = parseConfigJson(R"({"model_type":"qwen3_5_text","num_hidden_layers":6,
                               "full_attention_interval":3,"num_attention_heads":4,
                               "num_key_value_heads":2})", "c.json");
  ASSERT_TRUE(c.ok()) << c.error().str();
  std::vector<LayerType> want = {LayerType::Linear, LayerType::Linear, LayerType::Full,
                                 LayerType::Linear, LayerType::Linear, LayerType::Full};
  EXPECT_EQ(c->layerTypes, want);
  EXPECT_EQ(c->prefix(), "model.");
  EXPECT_EQ(c->partialRotaryFactor, 0.25);
}

TEST(Qwen35Config, RejectsLayerTypesOfWrongLength) {
  auto c = parseConfigJson(R"({"model_type":"qwen3_5_text","num_hidden_layers":3,
                               "layer_types":["linear_attention","full_attention"]})", "c.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("layer_types has 2"), std::string::npos);
}

TEST(Qwen35Config, RejectsUnknownLayerTypeAndModelType) {
  EXPECT_FALSE(parseConfigJson(R"({"model_type":"qwen3_5_text","num_hidden_layers":1,
                                   "layer_types":["moe"]})", "c").ok());
  auto c = parseConfigJson(R"({"model_type":"llama"})", "c.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("'llama'"), std::string::npos);
}

TEST(Qwen35Config, RejectsInconsistentHeads) {
  auto c = parseConfigJson(R"({"model_type":"qwen3_5_text","num_attention_heads":6,
                               "num_key_value_heads":4})", "c.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("num_key_value_heads"), std::string::npos);
  EXPECT_FALSE(parseConfigJson(R"({"model_type":"qwen3_5_text","hidden_size":"big"})", "c").ok());
}

// Each bound of config.cpp's field table, with the value in the message; the official 2B config
// (ParsesOfficialMultimodal2BConfig) is the twin that passes.
TEST(Qwen35Config, RejectsFieldsOutsideSaneBounds) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"model_type":"qwen3_5_text","vocab_size":1000000000000})",
       "'vocab_size' is 1000000000000, outside [1, 4194304]"},
      {R"({"model_type":"qwen3_5_text","hidden_size":1099511627776})",
       "'hidden_size' is 1099511627776, outside [1, 65536]"},
      {R"({"model_type":"qwen3_5_text","intermediate_size":0})", "'intermediate_size' is 0"},
      {R"({"model_type":"qwen3_5_text","head_dim":-4})", "'head_dim' is -4"},
      {R"({"model_type":"qwen3_5_text","linear_conv_kernel_dim":65})", "'linear_conv_kernel_dim' is 65"},
      {R"({"model_type":"qwen3_5_text","num_hidden_layers":5000})", "'num_hidden_layers' is 5000"},
      {R"({"model_type":"qwen3_5_text","vocab_size":18446744073709551615})",
       "'vocab_size' is not an integer in the int64 range"},
      {R"({"model_type":"qwen3_5_text","partial_rotary_factor":2.0})", "partial_rotary_factor"},
      {R"({"model_type":"qwen3_5_text","rms_norm_eps":0})", "rms_norm_eps"},
      {R"({"model_type":"qwen3_5_text","rope_parameters":{"rope_theta":-1}})", "rope_theta"},
  };
  for (const Case& c : cases) {
    auto r = parseConfigJson(c.json, "c.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint);
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().str();
  }
}

// nlohmann reports a byte offset; the Diag carries line and column (1-based), worked by hand:
// line 3 is `  "b" 2`, and the 2 (where a ':' was due) is its 7th character.
TEST(Qwen35Config, ParseErrorNamesLineAndColumn) {
  auto r = parseConfigJson("{\n  \"model_type\": \"qwen3_5_text\",\n  \"b\" 2\n}", "dir/config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint);
  EXPECT_EQ(r.error().loc.file, "dir/config.json");
  EXPECT_EQ(r.error().loc.line, 3u);
  EXPECT_EQ(r.error().loc.column, 7u);
  EXPECT_NE(r.error().str().find("dir/config.json:3:7"), std::string::npos) << r.error().str();
  // End of input: the position just past the last character.
  auto end = parseConfigJson("{\"model_type\": ", "c.json");
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().loc.line, 1u);
  EXPECT_EQ(end.error().loc.column, 16u);
}

TEST(Qwen35Config, RoundTripsBothLayouts) {
  for (auto layout : {CheckpointLayout::TextOnly, CheckpointLayout::Multimodal}) {
    Qwen35Config c = tinyConfig(48, 5);
    c.layerTypes = {LayerType::Full, LayerType::Linear, LayerType::Full, LayerType::Linear, LayerType::Linear};
    c.layout = layout;
    c.tieWordEmbeddings = false;
    auto back = parseConfigJson(configToJson(c), "c.json");
    ASSERT_TRUE(back.ok()) << back.error().str();
    EXPECT_EQ(configToJson(*back), configToJson(c));
    EXPECT_EQ(back->layerTypes, c.layerTypes);
  }
}

TEST(TinyCheckpoint, IsDeterministicPerSeedAndKeepsF32Exceptions) {
  TinySpec spec{tinyConfig(), 7, StDtype::BF16};
  auto a = tinyTensors(spec), b = tinyTensors(spec);
  spec.seed = 8;
  auto c = tinyTensors(spec);
  ASSERT_EQ(a.size(), b.size());
  bool anyDiff = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].data, b[i].data) << a[i].name;
    anyDiff |= a[i].data != c[i].data;
    bool f32 = a[i].name.find("A_log") != std::string::npos || a[i].name.find("linear_attn.norm") != std::string::npos;
    EXPECT_EQ(a[i].dtype, f32 ? StDtype::F32 : StDtype::BF16) << a[i].name;
  }
  EXPECT_TRUE(anyDiff);
}

TEST(TinyCheckpoint, WritesALoadableShardedCheckpoint) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / ("qgpu_tiny_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  TinySpec spec{tinyConfig(32, 2, 64), 3, StDtype::F32, /*maxShardBytes=*/20000};
  ASSERT_TRUE(generateTinyCheckpoint(dir, spec).ok());
  auto cfg = readConfig(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.error().str();
  EXPECT_EQ(cfg->dtype, "float32");
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().str();
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
  for (const auto& t : languageTensors(*cfg)) EXPECT_TRUE(ckpt->contains(t.name)) << t.name;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qgpu::model
