// Tests of model/load_plan.h: the one validation `qgpu model info` and Decoder::load share. Each
// rule has its failing twin in IntactTinyCheckpointPlans; the transformers behaviour each rule
// follows is in load_plan.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unistd.h>

#include "model/load_plan.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

namespace fs = std::filesystem;

class LoadPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config = tinyConfig(32, 4, 64);
    dir = (fs::temp_directory_path() / ("qgpu_plan_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    tensors = tinyTensors(TinySpec{config, 5});
  }
  void TearDown() override { fs::remove_all(dir); }
  Expected<LoadPlan> plan() {
    EXPECT_TRUE(writeConfig(dir, config).ok());
    EXPECT_TRUE(writeCheckpointTensors(dir, tensors).ok());
    return planLoad(dir);
  }
  std::string refusal() {
    auto p = plan();
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : p.error().str();
  }
  StTensorWrite& find(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  Qwen35Config config;
  std::string dir;
  std::vector<StTensorWrite> tensors;
};

TEST_F(LoadPlanTest, IntactTinyCheckpointPlans) {
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(p->tensors.size(), languageTensors(config).size());
  EXPECT_FALSE(p->headFromFile);
  EXPECT_TRUE(p->ignored.empty());
  EXPECT_TRUE(p->warnings().empty());
}

TEST_F(LoadPlanTest, RefusesMissingTensor) {
  std::erase_if(tensors, [](const StTensorWrite& t) { return t.name == "model.layers.2.mlp.down_proj.weight"; });
  EXPECT_NE(refusal().find("missing tensor 'model.layers.2.mlp.down_proj.weight'"), std::string::npos) << refusal();
}

TEST_F(LoadPlanTest, RefusesWrongRank) {
  auto& t = find("model.norm.weight");
  t.shape = {1, t.shape[0]};  // same bytes, rank 2
  std::string r = refusal();
  EXPECT_NE(r.find("tensor 'model.norm.weight' has rank 2 (shape [1, 32]), config implies rank 1 [32]"),
            std::string::npos) << r;
}

TEST_F(LoadPlanTest, RefusesWrongDtype) {
  auto& t = find("model.layers.0.linear_attn.dt_bias");
  t.dtype = StDtype::I32;  // same width as F32
  EXPECT_NE(refusal().find("'model.layers.0.linear_attn.dt_bias' has dtype I32"), std::string::npos);
}

// `model info` once accepted a config whose vocab disagreed with the stored tensors.
TEST_F(LoadPlanTest, RefusesConfigThatDisagreesWithTensorShapes) {
  config.vocabSize = 1000;
  EXPECT_NE(refusal().find("'model.embed_tokens.weight' has shape [64, 32], config implies [1000, 32]"),
            std::string::npos) << refusal();
}

TEST_F(LoadPlanTest, AcceptsF16Storage) {
  tensors = tinyTensors(TinySpec{config, 5, StDtype::F16});
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(p->find("model.embed_tokens.weight")->source.info->dtype, StDtype::F16);
}

// transformers: "unexpected keys" are reported and ignored.
TEST_F(LoadPlanTest, IgnoresExtraTensorsWithAWarningNamingThem) {
  tensors.push_back({"model.layers.0.linear_attn.conv1d.bias", StDtype::F32, {160}, std::vector<uint8_t>(640)});
  tensors.push_back({"model.layers.9.mlp.up_proj.weight", StDtype::F32, {1}, std::vector<uint8_t>(4)});
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(p->ignored, (std::vector<std::string>{"model.layers.0.linear_attn.conv1d.bias",
                                                   "model.layers.9.mlp.up_proj.weight"}));
  ASSERT_EQ(p->warnings().size(), 1u);
  EXPECT_NE(p->warnings()[0].find("ignoring 2 tensors"), std::string::npos) << p->warnings()[0];
  EXPECT_NE(p->warnings()[0].find("model.layers.0.linear_attn.conv1d.bias"), std::string::npos);
}

// transformers 5 tie_weights(): both stored and different → not tied, the file's head is used.
TEST_F(LoadPlanTest, TiedConfigWithDistinctStoredHeadUsesTheHead) {
  StTensorWrite head = find("model.embed_tokens.weight");
  head.name = "lm_head.weight";
  head.data[0] ^= 1;  // differs in one bit
  tensors.push_back(head);
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_TRUE(p->headFromFile);
  EXPECT_TRUE(p->tiedHeadDiffers);
  ASSERT_NE(p->find("lm_head.weight"), nullptr);
  EXPECT_EQ(p->find("lm_head.weight")->source.info->name, "lm_head.weight");
  EXPECT_TRUE(p->ignored.empty());
  ASSERT_EQ(p->warnings().size(), 1u);
  EXPECT_NE(p->warnings()[0].find("using lm_head.weight"), std::string::npos);
}

TEST_F(LoadPlanTest, TiedConfigWithEqualStoredHeadNeedsNoWarning) {
  StTensorWrite head = find("model.embed_tokens.weight");
  head.name = "lm_head.weight";
  tensors.push_back(head);
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_FALSE(p->tiedHeadDiffers);
  EXPECT_TRUE(p->warnings().empty());
}

// transformers ties symmetrically: only the head stored → it feeds the embeddings.
TEST_F(LoadPlanTest, TiedConfigWithOnlyTheHeadStoredTiesTheOtherWay) {
  find("model.embed_tokens.weight").name = "lm_head.weight";
  auto p = plan();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(p->find("model.embed_tokens.weight")->source.info->name, "lm_head.weight");
  EXPECT_FALSE(p->headFromFile);  // the head is the (tied) embeddings
}

TEST_F(LoadPlanTest, UntiedConfigWithoutHeadIsRefusedSayingWhatTransformersDoes) {
  config.tieWordEmbeddings = false;
  std::string r = refusal();
  EXPECT_NE(r.find("missing tensor 'lm_head.weight'"), std::string::npos) << r;
  EXPECT_NE(r.find("initialise the head randomly"), std::string::npos) << r;
}

TEST_F(LoadPlanTest, CountsNonFiniteStoredValuesPerDtype) {
  auto& f32 = find("model.norm.weight");
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::memcpy(f32.data.data() + 4, &nan, 4);
  std::memcpy(f32.data.data() + 12, &inf, 4);
  auto p = plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(countNonFinite(p->find("model.norm.weight")->source), 2u);
  EXPECT_EQ(countNonFinite(p->find("model.embed_tokens.weight")->source), 0u);  // the twin

  tensors = tinyTensors(TinySpec{config, 5, StDtype::BF16});
  uint16_t bfInf = 0x7f80, bfMax = 0x7f7f;  // +Inf, and the largest finite bf16
  std::memcpy(find("model.norm.weight").data.data(), &bfInf, 2);
  std::memcpy(find("model.norm.weight").data.data() + 2, &bfMax, 2);
  auto b = plan();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(countNonFinite(b->find("model.norm.weight")->source), 1u);

  tensors = tinyTensors(TinySpec{config, 5, StDtype::F16});
  uint16_t hNan = 0x7e00, hMax = 0x7bff;  // NaN, and 65504
  std::memcpy(find("model.norm.weight").data.data(), &hNan, 2);
  std::memcpy(find("model.norm.weight").data.data() + 2, &hMax, 2);
  auto h = plan();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(countNonFinite(h->find("model.norm.weight")->source), 1u);
}

}  // namespace
}  // namespace qgpu::model
