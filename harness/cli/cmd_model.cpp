// qgpu/harness/cli/cmd_model.cpp — `qgpu model ...`: inspect, generate with and create Qwen3.5
// checkpoints (model/). Built only with LibTorch (library qgpu_model_cli in model/CMakeLists.txt).
//
//   qgpu model info DIR                      config, layer schedule, parameter count, storage dtypes
//   qgpu model generate DIR (--prompt TEXT | --ids 1,2,3) [-n N] [--dtype f32|bf16] [--device cpu]
//                                            greedy decoding; prints tokens and tokens/s
//   qgpu model tiny OUT [--hidden 64 --layers 4 --vocab 256 --seed 1 --bf16 --multimodal]
//                                            writes a seeded random checkpoint (model/tiny.h)
//
// Text prompts use DIR/tokenizer.json (Qwen3.5 byte-level BPE) when present, else the byte
// tokenizer of the tiny models (one token per UTF-8 byte, ids 0..255). Exit codes as in
// command.h: 0 ok, 2 bad input (message names it), 3 harness error.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "model/decoder.h"
#include "model/safetensors.h"
#include "model/tiny.h"
#include "model/tokenizer.h"

namespace qgpu::cli {
namespace {

using namespace qgpu::model;

struct ModelInfoOptions {
  std::string dir;
};

struct ModelGenerateOptions {
  std::string dir;
  std::string prompt;
  std::string ids;
  int64_t maxNewTokens = 32;
  std::string dtype = "f32";
  std::string device = "cpu";
};

struct ModelTinyOptions {
  std::string out;
  int64_t hidden = 64;
  int64_t layers = 4;
  int64_t vocab = 256;
  uint64_t seed = 1;
  bool bf16 = false;
  bool multimodal = false;
};

int report(const Diag& d) { return reportError(d); }

std::string layerSchedule(const Qwen35Config& c) {
  std::string s;
  for (LayerType t : c.layerTypes) s += t == LayerType::Linear ? 'L' : 'F';
  return s;
}

int runInfo(const ModelInfoOptions& o, const CommonOptions& common) {
  auto config = readConfig(o.dir);
  if (!config) return report(config.error());
  auto ckpt = Checkpoint::open(o.dir);
  if (!ckpt) return report(ckpt.error());
  std::map<std::string, int64_t> dtypes;  // storage dtype → tensor count (language tensors)
  for (const TensorSpec& t : languageTensors(*config)) {
    auto found = ckpt->get(t.name);
    if (!found) return report(found.error());
    ++dtypes[stDtypeName(found->info->dtype)];
  }
  const Qwen35Config& c = *config;
  int64_t linear = std::count(c.layerTypes.begin(), c.layerTypes.end(), LayerType::Linear);
  if (common.json) {
    nlohmann::json j = {{"dir", o.dir},
                        {"layout", c.layout == CheckpointLayout::Multimodal ? "qwen3_5" : "qwen3_5_text"},
                        {"layers", c.numLayers()},
                        {"layer_types", layerSchedule(c)},
                        {"hidden_size", c.hiddenSize},
                        {"intermediate_size", c.intermediateSize},
                        {"vocab_size", c.vocabSize},
                        {"tie_word_embeddings", c.tieWordEmbeddings},
                        {"parameters", c.parameterCount()},
                        {"data_bytes", ckpt->dataBytes()},
                        {"storage_dtypes", dtypes},
                        {"config_dtype", c.dtype}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("checkpoint   %s (%s layout)\n", o.dir.c_str(),
              c.layout == CheckpointLayout::Multimodal ? "multimodal qwen3_5" : "text-only qwen3_5_text");
  std::printf("layers       %lld: %lld Gated DeltaNet, %lld full attention\n", (long long)c.numLayers(),
              (long long)linear, (long long)(c.numLayers() - linear));
  std::printf("schedule     %s  (L = linear_attention, F = full_attention)\n", layerSchedule(c).c_str());
  std::printf("widths       hidden %lld, mlp %lld, vocab %lld, %s head\n", (long long)c.hiddenSize,
              (long long)c.intermediateSize, (long long)c.vocabSize, c.tieWordEmbeddings ? "tied" : "untied");
  std::printf("attention    %lld q / %lld kv heads of %lld, rotary %lld, theta %g\n",
              (long long)c.numAttentionHeads, (long long)c.numKeyValueHeads, (long long)c.headDim,
              (long long)c.rotaryDim(), c.ropeTheta);
  std::printf("deltanet     %lld k / %lld v heads of %lld / %lld, conv %lld\n", (long long)c.linearNumKeyHeads,
              (long long)c.linearNumValueHeads, (long long)c.linearKeyHeadDim, (long long)c.linearValueHeadDim,
              (long long)c.linearConvKernelDim);
  std::printf("parameters   %lld (language model)\n", (long long)c.parameterCount());
  std::string st;
  for (const auto& [name, n] : dtypes) st += name + " x" + std::to_string(n) + " ";
  std::printf("storage      %s(%llu bytes; config says %s)\n", st.c_str(),
              (unsigned long long)ckpt->dataBytes(), c.dtype.c_str());
  return kExitOk;
}

Expected<std::vector<int64_t>> parseIds(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return makeDiag(ErrorKind::Usage, "--ids: '" + item + "' is not an integer");
    }
  }
  return out;
}

int runGenerate(const ModelGenerateOptions& o, const CommonOptions& common) {
  DecoderOptions options;
  if (o.dtype != "f32" && o.dtype != "bf16") return report(makeDiag(ErrorKind::Usage, "--dtype must be f32 or bf16"));
  options.dtype = o.dtype == "bf16" ? ComputeDtype::BF16 : ComputeDtype::F32;
  options.device = o.device;
  std::optional<BpeTokenizer> bpe;
  if (std::filesystem::exists(std::filesystem::path(o.dir) / "tokenizer.json")) {
    auto tok = BpeTokenizer::load(o.dir);
    if (!tok) return report(tok.error());
    bpe = std::move(*tok);
  }
  auto detok = [&](const std::vector<int64_t>& ids) { return bpe ? bpe->decode(ids) : ByteTokenizer::decode(ids); };
  std::vector<int64_t> prompt;
  if (!o.ids.empty()) {
    auto ids = parseIds(o.ids);
    if (!ids) return report(ids.error());
    prompt = *ids;
  } else {
    prompt = bpe ? bpe->encode(o.prompt) : ByteTokenizer::encode(o.prompt);
  }
  if (prompt.empty()) return report(makeDiag(ErrorKind::Usage, "give a non-empty --prompt or --ids"));
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto decoder = Decoder::load(o.dir, options);
  if (!decoder) return report(decoder.error());
  auto t1 = Clock::now();
  auto first = (*decoder)->forward(prompt);
  if (!first) return report(first.error());
  auto t2 = Clock::now();
  std::vector<int64_t> out = {first->argmax(0)};
  const auto& eos = (*decoder)->config().eosTokenIds;
  while (static_cast<int64_t>(out.size()) < o.maxNewTokens &&
         std::find(eos.begin(), eos.end(), out.back()) == eos.end()) {
    int64_t tok = out.back();
    auto step = (*decoder)->forward(std::span<const int64_t>(&tok, 1));
    if (!step) return report(step.error());
    out.push_back(step->argmax(0));
  }
  auto t3 = Clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double decodeTps = out.size() > 1 ? static_cast<double>(out.size() - 1) / secs(t2, t3) : 0.0;
  const double prefillTps = static_cast<double>(prompt.size()) / secs(t1, t2);
  if (common.json) {
    nlohmann::json j = {{"tokens", out}, {"text", detok(out)}, {"load_s", secs(t0, t1)},
                        {"prefill_tokens_per_s", prefillTps}, {"decode_tokens_per_s", decodeTps},
                        {"dtype", o.dtype}, {"device", o.device}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::string ids;
  for (int64_t t : out) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  std::printf("tokens   %s\n", ids.c_str());
  std::printf("text     %s\n", detok(out).c_str());
  std::printf("speed    load %.2f s, prefill %zu tokens at %.1f tokens/s, decode %zu tokens at %.1f tokens/s (%s, %s)\n",
              secs(t0, t1), prompt.size(), prefillTps, out.size() - 1, decodeTps, o.dtype.c_str(), o.device.c_str());
  return kExitOk;
}

int runTiny(const ModelTinyOptions& o) {
  TinySpec spec{tinyConfig(o.hidden, o.layers, o.vocab), o.seed, o.bf16 ? StDtype::BF16 : StDtype::F32};
  if (o.multimodal) spec.config.layout = CheckpointLayout::Multimodal;
  auto status = generateTinyCheckpoint(o.out, spec);
  if (!status) return report(status.error());
  std::printf("wrote %s (%lld parameters, seed %llu)\n", o.out.c_str(), (long long)spec.config.parameterCount(),
              (unsigned long long)o.seed);
  return kExitOk;
}

}  // namespace

Command addModelCommand(CLI::App& root, const CommonOptions& common) {
  auto* app = root.add_subcommand("model", "Inspect, run and create Qwen3.5 checkpoints");
  app->require_subcommand(1);

  auto info = std::make_shared<ModelInfoOptions>();
  auto* infoApp = app->add_subcommand("info", "Config, layer types, parameter count and dtypes of a checkpoint");
  infoApp->add_option("dir", info->dir, "Checkpoint directory (config.json + safetensors)")->required();

  auto gen = std::make_shared<ModelGenerateOptions>();
  auto* genApp = app->add_subcommand("generate", "Greedy decoding with tokens/s");
  genApp->add_option("dir", gen->dir, "Checkpoint directory")->required();
  genApp->add_option("--prompt", gen->prompt, "Prompt text (byte-level tokens)");
  genApp->add_option("--ids", gen->ids, "Prompt token ids, comma-separated");
  genApp->add_option("-n,--tokens", gen->maxNewTokens, "Tokens to generate")->check(CLI::PositiveNumber);
  genApp->add_option("--dtype", gen->dtype, "Compute dtype: f32 or bf16");
  genApp->add_option("--device", gen->device, "LibTorch device: cpu, cuda, cuda:N");

  auto tiny = std::make_shared<ModelTinyOptions>();
  auto* tinyApp = app->add_subcommand("tiny", "Write a seeded random Qwen3.5 checkpoint");
  tinyApp->add_option("out", tiny->out, "Output directory")->required();
  tinyApp->add_option("--hidden", tiny->hidden, "hidden_size")->check(CLI::PositiveNumber);
  tinyApp->add_option("--layers", tiny->layers, "num_hidden_layers (full attention every 4th)")->check(CLI::PositiveNumber);
  tinyApp->add_option("--vocab", tiny->vocab, "vocab_size")->check(CLI::PositiveNumber);
  tinyApp->add_option("--seed", tiny->seed, "Random seed");
  tinyApp->add_flag("--bf16", tiny->bf16, "Store BF16 (A_log and the gated-norm weight stay F32)");
  tinyApp->add_flag("--multimodal", tiny->multimodal, "Official qwen3_5 layout (model.language_model.)");

  Command cmd;
  cmd.app = app;
  cmd.run = [=, &common]() -> int {
    if (infoApp->parsed()) return runInfo(*info, common);
    if (genApp->parsed()) return runGenerate(*gen, common);
    if (tinyApp->parsed()) return runTiny(*tiny);
    return kExitUsage;
  };
  return cmd;
}

}  // namespace qgpu::cli
