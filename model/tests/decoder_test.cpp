// Tests of model/decoder.h: the Hugging Face cross-check (fixtures recorded by ci/hf_reference.py
// with transformers' Qwen3_5ForCausalLM), layout/sharding invariance, prefill ≡ token-by-token, and
// load-time rejection of checkpoints that disagree with their config.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "model/decoder.h"
#include "model/safetensors.h"
#include "model/tests/hf_fixture.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

namespace fs = std::filesystem;

std::string tempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("qgpu_dec_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

HfFixture loadFixture(const std::string& name) {
  return loadHfFixture(std::string(QGPU_SOURCE_DIR) + "/model/tests/data/hf_" + name + ".safetensors",
                       "hf-logits");
}

// The edit ci/hf_reference.py's apply_variant() makes to a generated checkpoint (same tensors,
// same values): "head_negated" adds lm_head.weight = -embeddings, "conv1d_bias" adds
// model.layers.0.linear_attn.conv1d.bias = 1.0 per channel.
void applyVariant(const std::string& dir, const std::string& variant) {
  if (variant.empty()) return;
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().str();
  std::vector<StTensorWrite> tensors;
  for (const std::string& name : ckpt->names()) {
    auto t = ckpt->get(name);
    ASSERT_TRUE(t.ok());
    auto bytes = t->bytes();
    tensors.push_back({name, t->info->dtype, t->info->shape, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  }
  auto byName = [&](const std::string& name) -> const StTensorWrite& {
    return *std::find_if(tensors.begin(), tensors.end(), [&](const StTensorWrite& t) { return t.name == name; });
  };
  if (variant == "head_negated") {
    StTensorWrite head = byName("model.embed_tokens.weight");
    ASSERT_EQ(head.dtype, StDtype::F32);
    head.name = "lm_head.weight";
    for (size_t i = 3; i < head.data.size(); i += 4) head.data[i] ^= 0x80;  // flip the sign bit
    tensors.push_back(std::move(head));
  } else if (variant == "conv1d_bias") {
    const int64_t channels = byName("model.layers.0.linear_attn.conv1d.weight").shape[0];
    StTensorWrite bias{"model.layers.0.linear_attn.conv1d.bias", StDtype::F32, {channels}, {}};
    const float one = 1.0f;
    for (int64_t i = 0; i < channels; ++i)
      bias.data.insert(bias.data.end(), reinterpret_cast<const uint8_t*>(&one), reinterpret_cast<const uint8_t*>(&one) + 4);
    tensors.push_back(std::move(bias));
  } else {
    FAIL() << "unknown fixture variant " << variant;
  }
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
}

// Regenerates the fixture's checkpoint and checks it is byte-identical to what transformers saw.
std::string makeCheckpoint(HfFixture& fx, CheckpointLayout layout, uint64_t maxShard = UINT64_MAX) {
  auto config = parseConfigJson(fx.meta["config"], "fixture config");
  EXPECT_TRUE(config.ok());
  config->layout = layout;
  std::string dir = tempDir(fx.meta["case"] + (layout == CheckpointLayout::Multimodal ? "_mm" : "") +
                            (maxShard != UINT64_MAX ? "_sh" : ""));
  const std::string& storage = fx.meta["storage"];
  TinySpec spec{*config, std::stoull(fx.meta["seed"]),
                storage == "bf16" ? StDtype::BF16 : storage == "f16" ? StDtype::F16 : StDtype::F32, maxShard};
  EXPECT_TRUE(generateTinyCheckpoint(dir, spec).ok());
  if (layout == CheckpointLayout::TextOnly && maxShard == UINT64_MAX) {
    EXPECT_EQ(fx.meta["weights_fnv1a64"], fileDigestHex(dir + "/model.safetensors"))
        << "the generator no longer makes the fixture's weights";
  }
  applyVariant(dir, fx.meta["variant"]);
  return dir;
}

struct Diff {
  double maxAbs = 0, maxRef = 0;
  double relative() const { return maxAbs / std::max(1.0, maxRef); }
};

void accumulate(Diff& d, std::span<const float> got, std::span<const float> want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    d.maxAbs = std::max(d.maxAbs, static_cast<double>(std::fabs(got[i] - want[i])));
    d.maxRef = std::max(d.maxRef, static_cast<double>(std::fabs(want[i])));
  }
}

// Our logits on the fixture's prompt, then teacher-forced on its greedy tokens (one cached forward
// per token): [L, V] and [N, V].
struct FixtureRun {
  Logits prefill;
  std::vector<float> decode;
  std::vector<int64_t> greedy;  // our argmax after the prompt and after each forced token
};

FixtureRun runFixture(HfFixture& fx, const std::string& dir, ComputeDtype dtype) {
  FixtureRun run;
  auto decoder = Decoder::load(dir, DecoderOptions{dtype});
  EXPECT_TRUE(decoder.ok()) << (decoder.ok() ? "" : decoder.error().str());
  if (!decoder.ok()) return run;
  auto logits = (*decoder)->forward(fx.prompt, /*allLogits=*/true);
  EXPECT_TRUE(logits.ok());
  run.prefill = *logits;
  run.greedy.push_back(logits->argmax(logits->rows - 1));
  for (size_t i = 0; i + 1 < fx.greedy.size(); ++i) {
    auto step = (*decoder)->forward(std::span<const int64_t>(&fx.greedy[i], 1));
    EXPECT_TRUE(step.ok());
    run.decode.insert(run.decode.end(), step->data.begin(), step->data.end());
    run.greedy.push_back(step->argmax(0));
  }
  return run;
}

Diff diffOf(std::span<const float> got, std::span<const float> want) {
  Diff d;
  accumulate(d, got, want);
  return d;
}

class HfCrossCheck : public ::testing::TestWithParam<const char*> {};

// fp32: every prompt position (prompts span 2-3 of HF's 64-token chunks) and every greedy step
// must match transformers within 1e-4 relative to the largest logit, with identical greedy tokens.
TEST_P(HfCrossCheck, Fp32LogitsAndGreedyTokensMatchTransformers) {
  HfFixture fx = loadFixture(GetParam());
  ASSERT_FALSE(fx.prompt.empty());
  ASSERT_EQ(fx.meta["compute"], "f32");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  FixtureRun run = runFixture(fx, dir, ComputeDtype::F32);
  Diff pre = diffOf(run.prefill.data, fx.prefill), dec = diffOf(run.decode, fx.decode);
  std::printf("[hf %s] transformers %s fp32: prefill max|diff| %.3g, decode max|diff| %.3g (max|logit| %.3g)\n",
              GetParam(), fx.meta["transformers"].c_str(), pre.maxAbs, dec.maxAbs, pre.maxRef);
  EXPECT_LE(pre.relative(), 1e-4);
  EXPECT_LE(dec.relative(), 1e-4);
  EXPECT_EQ(run.greedy, fx.greedy) << "greedy tokens differ from transformers";
  fs::remove_all(dir);
}

// The last three are checkpoints transformers reads in its own way (ci/hf_reference.py): a tied
// config with a distinct stored head, F16 storage, and a tensor the model does not use.
INSTANTIATE_TEST_SUITE_P(Fixtures, HfCrossCheck,
                         ::testing::Values("mixed4", "fullfirst_untied", "deep_gqa", "tied_distinct_head", "f16",
                                           "extra_tensor"));

// bf16 storage, fp32 compute: upcasting is exact, so this matches HF's fp32 run as tightly as fp32.
// bf16 compute: every activation is rounded to 8 mantissa bits and our kernels (LibTorch 1.13)
// round differently from HF's, so bit-level agreement is not expected; instead our error against
// HF-fp32 must be at most twice HF-bf16's own error against HF-fp32 on the same tokens.
TEST(HfCrossCheckBf16, Bf16WithinTransformersOwnError) {
  HfFixture fx = loadFixture("bf16");
  ASSERT_EQ(fx.meta["storage"], "bf16");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  auto pre32 = fx.read<float>("prefill_logits_f32ref");
  auto dec32 = fx.read<float>("decode_logits_f32ref");

  FixtureRun f32 = runFixture(fx, dir, ComputeDtype::F32);
  Diff storage = diffOf(f32.prefill.data, pre32), storageDec = diffOf(f32.decode, dec32);
  EXPECT_LE(storage.relative(), 1e-4);
  EXPECT_LE(storageDec.relative(), 1e-4);

  FixtureRun bf = runFixture(fx, dir, ComputeDtype::BF16);
  Diff ours = diffOf(bf.prefill.data, pre32), oursDec = diffOf(bf.decode, dec32);
  Diff hf = diffOf(fx.prefill, pre32), hfDec = diffOf(fx.decode, dec32);
  size_t agree = 0;
  for (size_t i = 0; i < fx.greedy.size(); ++i) agree += bf.greedy[i] == fx.greedy[i];
  std::printf("[hf bf16] storage bf16/compute fp32 max|diff| %.3g; compute bf16 vs HF-fp32: ours %.3g / %.3g "
              "(prefill/decode), HF-bf16 %.3g / %.3g; greedy agreement with HF-bf16 %zu/%zu\n",
              std::max(storage.maxAbs, storageDec.maxAbs), ours.maxAbs, oursDec.maxAbs, hf.maxAbs, hfDec.maxAbs,
              agree, fx.greedy.size());
  EXPECT_LE(ours.maxAbs, 2 * hf.maxAbs);
  EXPECT_LE(oursDec.maxAbs, 2 * std::max(hfDec.maxAbs, hf.maxAbs));
  fs::remove_all(dir);
}

// The official multimodal layout (prefix model.language_model., nested text_config) and sharding
// must not change a single bit of the logits.
TEST(Decoder, MultimodalLayoutAndShardsGiveIdenticalLogits) {
  HfFixture fx = loadFixture("mixed4");
  std::string plain = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  std::string mm = makeCheckpoint(fx, CheckpointLayout::Multimodal, /*maxShard=*/40000);
  // Add vision and MTP tensors the loader must skip.
  {
    auto ckpt = Checkpoint::open(mm);
    ASSERT_TRUE(ckpt.ok());
    std::vector<StTensorWrite> extra(2);
    extra[0] = {"model.visual.patch_embed.proj.weight", StDtype::BF16, {4}, std::vector<uint8_t>(8)};
    extra[1] = {"mtp.fc.weight", StDtype::BF16, {4}, std::vector<uint8_t>(8)};
    ASSERT_TRUE(writeSafetensors(mm + "/extra.safetensors", {&extra[0], &extra[1]}).ok());
    auto index = readTextFile(mm + "/model.safetensors.index.json");
    ASSERT_TRUE(index.ok());
    std::string text = *index;
    text.replace(text.find("\"weight_map\": {") + 15, 0,
                 "\n    \"model.visual.patch_embed.proj.weight\": \"extra.safetensors\",\n"
                 "    \"mtp.fc.weight\": \"extra.safetensors\",");
    ASSERT_TRUE(writeTextFile(mm + "/model.safetensors.index.json", text).ok());
  }
  auto a = Decoder::load(plain);
  auto b = Decoder::load(mm);
  ASSERT_TRUE(a.ok()) << a.error().str();
  ASSERT_TRUE(b.ok()) << b.error().str();
  auto la = (*a)->forward(fx.prompt, true);
  auto lb = (*b)->forward(fx.prompt, true);
  ASSERT_TRUE(la.ok() && lb.ok());
  EXPECT_EQ(la->data, lb->data);
}

// The chunked prefill and the token recurrence are the same math: feeding a prompt one token at a
// time must agree with one prefill to rounding.
TEST(Decoder, TokenByTokenMatchesPrefill) {
  HfFixture fx = loadFixture("deep_gqa");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  auto d = Decoder::load(dir);
  ASSERT_TRUE(d.ok());
  auto all = (*d)->forward(fx.prompt, true);
  ASSERT_TRUE(all.ok());
  (*d)->reset();
  Diff diff;
  for (size_t i = 0; i < fx.prompt.size(); ++i) {
    auto step = (*d)->forward(std::span<const int64_t>(&fx.prompt[i], 1));
    ASSERT_TRUE(step.ok());
    accumulate(diff, step->row(0), all->row(static_cast<int64_t>(i)));
  }
  EXPECT_EQ((*d)->position(), static_cast<int64_t>(fx.prompt.size()));
  EXPECT_LE(diff.relative(), 1e-4);
  // Continuing with several tokens at once (chunked path on top of a cache) agrees too.
  (*d)->reset();
  auto head = (*d)->forward(std::span<const int64_t>(fx.prompt.data(), 50), true);
  auto tail = (*d)->forward(std::span<const int64_t>(fx.prompt.data() + 50, fx.prompt.size() - 50), true);
  ASSERT_TRUE(head.ok() && tail.ok());
  Diff cont;
  accumulate(cont, tail->row(tail->rows - 1), all->row(all->rows - 1));
  EXPECT_LE(cont.relative(), 1e-4);
}

TEST(Decoder, GenerateGreedyReproducesFixtureTokens) {
  HfFixture fx = loadFixture("fullfirst_untied");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  auto d = Decoder::load(dir);
  ASSERT_TRUE(d.ok());
  auto tokens = (*d)->generateGreedy(fx.prompt, static_cast<int64_t>(fx.greedy.size()));
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(*tokens, fx.greedy);
  // A stop token ends generation right after it is produced.
  (*d)->reset();
  auto stopped = (*d)->generateGreedy(fx.prompt, 20, std::vector<int64_t>{fx.greedy[2]});
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->size(), 3u);
}

TEST(Decoder, RejectsTokenOutsideVocabulary) {
  HfFixture fx = loadFixture("mixed4");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  auto d = Decoder::load(dir);
  ASSERT_TRUE(d.ok());
  std::vector<int64_t> bad = {1, 128};
  auto r = (*d)->forward(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_EQ((*d)->position(), 0);  // a rejected call changes nothing
}

TEST(Decoder, ThreadSettingDoesNotChangeLogitsAndNegativeIsRefused) {
  HfFixture fx = loadFixture("mixed4");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  auto one = Decoder::load(dir, DecoderOptions{ComputeDtype::F32, "cpu", 1});
  ASSERT_TRUE(one.ok());
  auto a = (*one)->forward(fx.prompt, true);
  auto two = Decoder::load(dir, DecoderOptions{ComputeDtype::F32, "cpu", 2});
  ASSERT_TRUE(two.ok());
  auto b = (*two)->forward(fx.prompt, true);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->data, b->data);  // element-wise ops split over threads round alike
  auto bad = Decoder::load(dir, DecoderOptions{ComputeDtype::F32, "cpu", -1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_TRUE(Decoder::load(dir).ok());  // back to the default of one thread
}

// DecoderOptions::blasThreads sets OpenBLAS's pool where the BLAS is OpenBLAS (the project's
// choice, README "Dependencies"), read back through its own getter; negative is refused.
TEST(Decoder, BlasThreadsSetOpenBlasPoolAndNegativeIsRefused) {
  using GetThreads = int (*)();
  auto get = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (get == nullptr) GTEST_SKIP() << "the BLAS LibTorch loaded is not OpenBLAS";
  HfFixture fx = loadFixture("mixed4");
  std::string dir = makeCheckpoint(fx, CheckpointLayout::TextOnly);
  const int before = get();
  for (int threads : {1, 2}) {
    DecoderOptions options{ComputeDtype::F32, "cpu"};
    options.blasThreads = threads;
    ASSERT_TRUE(Decoder::load(dir, options).ok());
    EXPECT_EQ(get(), threads);
  }
  DecoderOptions bad{ComputeDtype::F32, "cpu"};
  bad.blasThreads = -1;
  auto refused = Decoder::load(dir, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Usage);
  DecoderOptions restore{ComputeDtype::F32, "cpu"};
  restore.blasThreads = before;
  EXPECT_TRUE(Decoder::load(dir, restore).ok());
}

// Load-time checks: each names the file and the tensor.
class CorruptCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    config = tinyConfig(32, 4, 64);
    dir = tempDir("corrupt");
    tensors = tinyTensors(TinySpec{config, 5});
  }
  Diag loadWith(const std::vector<StTensorWrite>& ts) {
    EXPECT_TRUE(writeConfig(dir, config).ok());
    EXPECT_TRUE(writeCheckpointTensors(dir, ts).ok());
    auto d = Decoder::load(dir);
    EXPECT_FALSE(d.ok());
    return d.ok() ? Diag{} : d.error();
  }
  StTensorWrite& find(const std::string& suffix) {
    for (auto& t : tensors)
      if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return t;
    throw std::runtime_error("no tensor " + suffix);
  }
  Qwen35Config config;
  std::string dir;
  std::vector<StTensorWrite> tensors;
};

TEST_F(CorruptCheckpoint, IntactCheckpointLoads) {
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  EXPECT_TRUE(Decoder::load(dir).ok());
}

TEST_F(CorruptCheckpoint, MissingTensor) {
  std::erase_if(tensors, [](const StTensorWrite& t) { return t.name == "model.layers.3.self_attn.k_norm.weight"; });
  Diag d = loadWith(tensors);
  EXPECT_EQ(d.kind, ErrorKind::Checkpoint);
  EXPECT_NE(d.message.find("'model.layers.3.self_attn.k_norm.weight'"), std::string::npos) << d.str();
}

TEST_F(CorruptCheckpoint, WrongShape) {
  auto& t = find("layers.0.mlp.up_proj.weight");
  t.shape = {t.shape[1], t.shape[0]};  // transposed: same byte size, wrong shape
  Diag d = loadWith(tensors);
  EXPECT_NE(d.message.find("'model.layers.0.mlp.up_proj.weight' has shape"), std::string::npos) << d.str();
  EXPECT_NE(d.loc.file.find("model.safetensors"), std::string::npos);
}

TEST_F(CorruptCheckpoint, UnsupportedDtype) {
  auto& t = find("layers.1.linear_attn.A_log");
  t.dtype = StDtype::I32;
  Diag d = loadWith(tensors);
  EXPECT_NE(d.message.find("'model.layers.1.linear_attn.A_log' has dtype I32"), std::string::npos) << d.str();
}

TEST_F(CorruptCheckpoint, ConfigWithMoreLayersThanCheckpoint) {
  auto ts = tensors;
  config.layerTypes.push_back(LayerType::Linear);
  Diag d = loadWith(ts);
  EXPECT_NE(d.message.find("'model.layers.4."), std::string::npos) << d.str();
}

// transformers reports tensors it has no parameter for as "unexpected" and ignores them; so do we,
// naming them in a warning (load_plan_test.cpp pins the rule itself).
TEST_F(CorruptCheckpoint, UnexpectedTensorIsIgnoredWithAWarning) {
  tensors.push_back({"model.layers.0.linear_attn.conv1d.bias", StDtype::F32, {1}, std::vector<uint8_t>(4)});
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  auto d = Decoder::load(dir);
  ASSERT_TRUE(d.ok()) << d.error().str();
  ASSERT_EQ((*d)->warnings().size(), 1u);
  EXPECT_NE((*d)->warnings()[0].find("model.layers.0.linear_attn.conv1d.bias"), std::string::npos);
}

TEST_F(CorruptCheckpoint, TruncatedFile) {
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  fs::resize_file(dir + "/model.safetensors", fs::file_size(dir + "/model.safetensors") - 1);
  auto d = Decoder::load(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().loc.file, dir + "/model.safetensors");
  EXPECT_NE(d.error().message.find("truncated"), std::string::npos);
}

// A checkpoint with one NaN weight: the logits it makes non-finite are a Checkpoint error that
// names the sequence position and the weight, never a silently generated token.
class NonFiniteCheckpoint : public CorruptCheckpoint {
 protected:
  std::unique_ptr<Decoder> loadWithBadValue(const std::string& name, size_t index, float value) {
    auto& t = find(name);
    std::memcpy(t.data.data() + 4 * index, &value, 4);
    EXPECT_TRUE(writeConfig(dir, config).ok());
    EXPECT_TRUE(writeCheckpointTensors(dir, tensors).ok());
    auto d = Decoder::load(dir);
    EXPECT_TRUE(d.ok()) << d.error().str();  // loading is fine: transformers loads it too
    return d.ok() ? std::move(*d) : nullptr;
  }
};

TEST_F(NonFiniteCheckpoint, NaNInTheFinalNormStopsAtTheFirstPosition) {
  auto d = loadWithBadValue("model.norm.weight", 3, std::numeric_limits<float>::quiet_NaN());
  ASSERT_NE(d, nullptr);
  std::vector<int64_t> prompt = {1, 2, 3};
  auto r = d->forward(prompt, /*allLogits=*/true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint);
  EXPECT_NE(r.error().message.find("non-finite logits at sequence position 0"), std::string::npos) << r.error().str();
  EXPECT_NE(r.error().message.find("model.norm.weight (1)"), std::string::npos) << r.error().str();
  EXPECT_EQ(r.error().loc.file, dir);
}

// An Inf in row 5 of the tied embeddings only poisons logit 5 (the head's row 5), while a prompt
// without token 5 runs on finite activations: the check must look at every logit, and the
// position it names is the last one when only the last row is returned.
TEST_F(NonFiniteCheckpoint, InfInOneHeadRowIsFoundAtTheReturnedPosition) {
  const int64_t D = config.hiddenSize;
  auto d = loadWithBadValue("model.embed_tokens.weight", static_cast<size_t>(5 * D + 1),
                            std::numeric_limits<float>::infinity());
  ASSERT_NE(d, nullptr);
  std::vector<int64_t> prompt = {1, 2, 3, 4};
  auto r = d->forward(prompt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("at sequence position 3: 0 NaN and 1 infinite of 64 (first at token id 5)"),
            std::string::npos) << r.error().str();
  EXPECT_NE(r.error().message.find("model.embed_tokens.weight (1)"), std::string::npos);
  // The twin: the same weights with the value finite generate without error.
  auto d2 = loadWithBadValue("model.embed_tokens.weight", static_cast<size_t>(5 * D + 1), 0.25f);
  ASSERT_NE(d2, nullptr);
  EXPECT_TRUE(d2->forward(prompt).ok());
}

// Weights that are mostly exact zeros are held compact (DecoderOptions::compactZeroBlocks): as
// their nonzero block when whole rows and columns are zero, as a sparse matrix when at most 1/32 of
// the entries are nonzero. The logits are the dense model's (up to the summation order), in fp32
// and bf16, prefill across a chunk boundary and cached decode, and the decoder holds fewer bytes.
// A non-finite weight among the zeros is nonzero: it is kept, and still named.
enum class ZeroPattern { RowsAndColumns, OneIn37 };

class ZeroBlocks : public CorruptCheckpoint, public ::testing::WithParamInterface<ZeroPattern> {
 protected:
  // RowsAndColumns zeroes rows r % 3 != 0 and columns c % 2 == 1 of every linear weight but the
  // embedding (a block of 1/6); OneIn37 keeps entry i only where i % 37 == 0 (sparse).
  void zeroMost() {
    for (auto& t : tensors) {
      const bool linear = t.shape.size() == 2 && t.name.find("embed_tokens") == std::string::npos;
      if (!linear) continue;
      ASSERT_EQ(t.dtype, StDtype::F32);
      const int64_t rows = t.shape[0], cols = t.shape[1];
      const float zero = 0.0f;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const bool keep = GetParam() == ZeroPattern::RowsAndColumns ? r % 3 == 0 && c % 2 == 0
                                                                     : (r * cols + c) % 37 == 0;
          if (!keep) std::memcpy(t.data.data() + 4 * (r * cols + c), &zero, 4);
        }
    }
  }
  std::unique_ptr<Decoder> load(ComputeDtype dtype, bool compact) {
    DecoderOptions options{dtype};
    options.compactZeroBlocks = compact;
    auto d = Decoder::load(dir, options);
    EXPECT_TRUE(d.ok()) << d.error().str();
    return d.ok() ? std::move(*d) : nullptr;
  }
};

TEST_P(ZeroBlocks, CompactLinearsGiveTheDenseLogitsAndHoldFewerBytes) {
  zeroMost();
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < 70; ++i) prompt.push_back((i * 7 + 3) % config.vocabSize);  // 2 chunks
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dense = load(dtype, false);
    auto compact = load(dtype, true);
    ASSERT_TRUE(dense && compact);
    EXPECT_LT(compact->weightBytes() * 2, dense->weightBytes()) << computeDtypeName(dtype);
    auto want = dense->forward(prompt, true);
    auto got = compact->forward(prompt, true);
    ASSERT_TRUE(want.ok() && got.ok());
    Diff d;
    accumulate(d, got->data, want->data);
    for (int step = 0; step < 5; ++step) {
      const int64_t next = want->argmax(want->rows - 1);
      EXPECT_EQ(got->argmax(got->rows - 1), next) << computeDtypeName(dtype) << " step " << step;
      want = dense->forward(std::span<const int64_t>(&next, 1));
      got = compact->forward(std::span<const int64_t>(&next, 1));
      ASSERT_TRUE(want.ok() && got.ok());
      accumulate(d, got->data, want->data);
    }
    // fp32: summation order only; bf16: the same, then one bf16 rounding of a few outputs.
    EXPECT_LE(d.relative(), dtype == ComputeDtype::F32 ? 1e-5 : 2e-2) << computeDtypeName(dtype);
    EXPECT_GT(d.maxRef, 0.0);
  }
}

TEST_P(ZeroBlocks, ANaNAmongTheZerosIsKeptAndNamed) {
  zeroMost();
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  const int64_t cols = find(name).shape[1];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(find(name).data.data() + 4 * (1 * cols + 1), &nan, 4);  // row 1, column 1: zeroed
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  auto d = load(ComputeDtype::F32, true);
  ASSERT_NE(d, nullptr);
  std::vector<int64_t> prompt = {1, 2, 3};
  auto r = d->forward(prompt, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint);
  EXPECT_NE(r.error().message.find(name + " (1)"), std::string::npos) << r.error().str();
}

INSTANTIATE_TEST_SUITE_P(Patterns, ZeroBlocks, ::testing::Values(ZeroPattern::RowsAndColumns, ZeroPattern::OneIn37),
                         [](const auto& info) {
                           return info.param == ZeroPattern::RowsAndColumns ? "RowsAndColumns" : "OneIn37";
                         });

// Zeros the decoder skips at one token per forward (model/decode_step.h): state rows whose key
// channel is zero (its in_proj_qkv row, or its conv taps), a value head whose values are zero, and
// a full-attention layer whose o_proj is zero (the other one is not). Compact (skipping) and dense
// (every row, every layer computed) must give the same logits bit for bit — prefill across a chunk
// boundary, then cached decode — in fp32 and bf16; every other linear stays dense in both, so that
// nothing else differs.
TEST_F(CorruptCheckpoint, SkippedZeroStateRowsAndASilentAttentionChangeNoLogitBit) {
  config = tinyConfig(32, 8, 64);  // full attention at layers 3 (silenced below) and 7
  tensors = tinyTensors(TinySpec{config, 5});
  auto zeroRows = [&](const std::string& name, int64_t first, int64_t count) {
    StTensorWrite& t = find(name);
    ASSERT_EQ(t.dtype, StDtype::F32);
    int64_t rowFloats = 1;
    for (size_t i = 1; i < t.shape.size(); ++i) rowFloats *= t.shape[i];
    std::fill_n(t.data.begin() + 4 * first * rowFloats, 4 * count * rowFloats, uint8_t{0});
  };
  const int64_t keyDim = config.linearKeyDim(), dv = config.linearValueHeadDim;
  ASSERT_EQ(config.layerTypes[0], LayerType::Linear);
  ASSERT_EQ(config.layerTypes[3], LayerType::Full);
  for (int64_t i = 1; i < keyDim; i += 4)
    zeroRows("layers.0.linear_attn.in_proj_qkv.weight", keyDim + i, 1);
  for (int64_t i = 2; i < keyDim; i += 4)
    zeroRows("layers.0.linear_attn.conv1d.weight", keyDim + i, 1);
  zeroRows("layers.0.linear_attn.in_proj_qkv.weight", 2 * keyDim + dv, dv);  // value head 1
  zeroRows("layers.1.linear_attn.in_proj_qkv.weight", keyDim,
           config.linearKeyHeadDim);  // key head 0
  zeroRows("layers.3.self_attn.o_proj.weight", 0,
           find("layers.3.self_attn.o_proj.weight").shape[0]);
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, tensors).ok());
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < 70; ++i) prompt.push_back((i * 5 + 1) % config.vocabSize);  // 2 chunks
  auto bitsDiffer = [](const Logits& a, const Logits& b) {
    EXPECT_EQ(a.data.size(), b.data.size());
    int64_t differ = 0;
    for (size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i)
      differ += std::memcmp(&a.data[i], &b.data[i], sizeof(float)) != 0;
    return differ;
  };
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    DecoderOptions denseOptions{dtype}, compactOptions{dtype};
    denseOptions.compactZeroBlocks = false;
    auto dense = Decoder::load(dir, denseOptions);
    auto compact = Decoder::load(dir, compactOptions);
    ASSERT_TRUE(dense.ok() && compact.ok());
    auto want = (*dense)->forward(prompt, true);
    auto got = (*compact)->forward(prompt, true);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(bitsDiffer(*got, *want), 0) << computeDtypeName(dtype) << " prefill";
    for (int step = 0; step < 8; ++step) {
      const int64_t next = want->argmax(want->rows - 1);
      want = (*dense)->forward(std::span<const int64_t>(&next, 1));
      got = (*compact)->forward(std::span<const int64_t>(&next, 1));
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_EQ(bitsDiffer(*got, *want), 0) << computeDtypeName(dtype) << " decode step " << step;
    }
  }
}

// F16 storage (transformers converts it to the requested dtype): logits equal, bit for bit, those
// of an F32 checkpoint holding the same values (each F16 value widened, which is exact).
TEST_F(CorruptCheckpoint, F16StorageEqualsF32OfTheSameValues) {
  auto half = tinyTensors(TinySpec{config, 5, StDtype::F16});
  std::vector<StTensorWrite> wide = half;
  for (auto& t : wide) {
    if (t.dtype != StDtype::F16) continue;
    std::vector<uint8_t> data(t.data.size() * 2);
    for (size_t i = 0; i < t.data.size() / 2; ++i) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      float f = f16ToFloat(h);
      std::memcpy(data.data() + 4 * i, &f, 4);
    }
    t.dtype = StDtype::F32;
    t.data = std::move(data);
  }
  std::string dirF16 = dir + "_f16";
  ASSERT_TRUE(writeConfig(dirF16, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dirF16, half).ok());
  ASSERT_TRUE(writeConfig(dir, config).ok());
  ASSERT_TRUE(writeCheckpointTensors(dir, wide).ok());
  auto a = Decoder::load(dirF16), b = Decoder::load(dir);
  ASSERT_TRUE(a.ok()) << a.error().str();
  ASSERT_TRUE(b.ok()) << b.error().str();
  std::vector<int64_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  auto la = (*a)->forward(prompt, true), lb = (*b)->forward(prompt, true);
  ASSERT_TRUE(la.ok() && lb.ok());
  EXPECT_EQ(la->data, lb->data);
  fs::remove_all(dirF16);
}

// tie_word_embeddings with a distinct stored lm_head: transformers 5 uses the stored head (it does
// not tie two stored tensors that differ), so the model must equal the same tensors untied — and
// differ from the tied model (the twin), or the test could not fail.
TEST_F(CorruptCheckpoint, TiedConfigWithDistinctHeadEqualsTheUntiedModel) {
  std::vector<StTensorWrite> withHead = tensors;
  StTensorWrite head = find("model.embed_tokens.weight");
  head.name = "lm_head.weight";
  for (size_t i = 0; i + 4 <= head.data.size(); i += 4) {  // a different head: the embeddings negated
    float f;
    std::memcpy(&f, head.data.data() + i, 4);
    f = -f;
    std::memcpy(head.data.data() + i, &f, 4);
  }
  withHead.push_back(head);
  auto logitsOf = [&](const Qwen35Config& c, const std::vector<StTensorWrite>& ts, const std::string& d) {
    EXPECT_TRUE(writeConfig(d, c).ok());
    EXPECT_TRUE(writeCheckpointTensors(d, ts).ok());
    auto dec = Decoder::load(d);
    EXPECT_TRUE(dec.ok()) << dec.error().str();
    std::vector<int64_t> prompt = {7, 8, 9};
    auto l = (*dec)->forward(prompt, true);
    EXPECT_TRUE(l.ok());
    return l->data;
  };
  Qwen35Config untied = config;
  untied.tieWordEmbeddings = false;
  auto tiedWithHead = logitsOf(config, withHead, dir + "_th");
  auto untiedModel = logitsOf(untied, withHead, dir + "_un");
  auto tiedModel = logitsOf(config, tensors, dir + "_t");
  EXPECT_EQ(tiedWithHead, untiedModel);
  EXPECT_NE(tiedWithHead, tiedModel);
  for (const char* s : {"_th", "_un", "_t"}) fs::remove_all(dir + s);
}

}  // namespace
}  // namespace qgpu::model
