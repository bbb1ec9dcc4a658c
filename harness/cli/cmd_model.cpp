// qgpu/harness/cli/cmd_model.cpp — `qgpu model ...`: inspect, generate with and create Qwen3.5
// checkpoints (model/). Built only with LibTorch (library qgpu_model_cli in model/CMakeLists.txt).
//
//   qgpu model info DIR                      config, layer schedule, parameter count, storage dtypes
//   qgpu model generate DIR (--prompt TEXT | --ids 1,2,3) [-n N] [--dtype f32|bf16] [--device cpu]
//                                            greedy decoding; prints tokens and tokens/s
//   qgpu model tiny OUT [--hidden 64 --layers 4 --vocab 256 --seed 1 --bf16|--f16 --multimodal]
//                                            writes a seeded random checkpoint (model/tiny.h)
//
// Text prompts use DIR/tokenizer.json (Qwen3.5 byte-level BPE) when present, else the byte
// tokenizer of the tiny models (one token per UTF-8 byte, ids 0..255). Exit codes as in
// command.h: 0 ok, 2 bad input (message names it: a corrupt or inconsistent checkpoint, or
// non-finite logits, is a Checkpoint error), 3 harness error. `info` and `generate` validate a
// checkpoint with the same function (model/load_plan.h) and print its warnings (tensors ignored as
// transformers ignores them, the head chosen) on stderr as "qgpu: warning: ...", and in JSON as
// "warnings". Generated text is bytes, not always UTF-8: see model/README.md ("Generated text")
// for how text and JSON output show it.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "model/decoder.h"
#include "model/load_plan.h"
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
  int threads = 1;
};

struct ModelTinyOptions {
  std::string out;
  int64_t hidden = 64;
  int64_t layers = 4;
  int64_t vocab = 256;
  uint64_t seed = 1;
  bool bf16 = false;
  bool f16 = false;
  bool multimodal = false;
};

// Bounds of the options (CLI11's PositiveNumber would print a range up to DBL_MAX).
constexpr int64_t kMaxNewTokens = 1 << 16;
constexpr int64_t kMaxTinyHidden = 1024, kMaxTinyLayers = 64, kMaxTinyVocab = 1 << 16;

int report(const Diag& d) { return reportError(d); }

// JSON output never aborts on bytes that are not UTF-8 (a path, a token's text): they become
// U+FFFD. Generated text also carries its exact bytes in hex (see printText).
std::string dumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void warn(const std::string& line) { std::fprintf(stderr, "qgpu: warning: %s\n", line.c_str()); }

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 when the byte there does not start one.
size_t utf8SequenceAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  const unsigned char c1 = b(i + 1);
  unsigned char lo = 0x80, hi = 0xbf;
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;
  if (c1 < lo || c1 > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  return n;
}

// The text as valid UTF-8: every byte that does not belong to a well-formed sequence becomes
// U+FFFD (one per byte).
std::string lossyUtf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceAt(s, i);
    if (n == 0) out += "\xef\xbf\xbd", n = 1;
    else out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

// For the terminal: well-formed UTF-8 as is, except control characters; those (C0 and C1), DEL, backslash and
// every byte outside a well-formed sequence as \n, \t, \\ or \xNN, so that the line is one line
// and no escape sequence reaches the terminal.
std::string terminalText(std::string_view s) {
  std::string out;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceAt(s, i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    // C1 controls (U+0080..U+009F, e.g. CSI) are well-formed but act on terminals too.
    const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0;
    if (c1) std::snprintf(buf, sizeof buf, "\\xc2\\x%02x", static_cast<unsigned char>(s[i + 1])), out += buf;
    else if (n > 1) out.append(s.substr(i, n));
    else if (c == '\n') out += "\\n", n = 1;
    else if (c == '\t') out += "\\t", n = 1;
    else if (c == '\\') out += "\\\\", n = 1;
    else if (n == 1 && c >= 0x20 && c != 0x7f) out += static_cast<char>(c);
    else std::snprintf(buf, sizeof buf, "\\x%02x", c), out += buf, n = 1;
    i += n;
  }
  return out;
}

std::string hexBytes(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

std::string layerSchedule(const Qwen35Config& c) {
  std::string s;
  for (LayerType t : c.layerTypes) s += t == LayerType::Linear ? 'L' : 'F';
  return s;
}

int runInfo(const ModelInfoOptions& o, const CommonOptions& common) {
  // The validation generate runs (Decoder::load calls planLoad too).
  auto plan = planLoad(o.dir);
  if (!plan) return report(plan.error());
  std::map<std::string, int64_t> dtypes;  // storage dtype → tensor count (tensors the model uses)
  std::map<std::string, uint64_t> nonFinite;  // tensor → NaN/Inf count (one pass over the bytes)
  for (const PlannedTensor& t : plan->tensors) {
    ++dtypes[stDtypeName(t.source.info->dtype)];
    if (uint64_t n = countNonFinite(t.source)) nonFinite[t.source.info->name] = n;
  }
  std::vector<std::string> warnings = plan->warnings();
  if (!nonFinite.empty()) {
    std::string list;
    for (const auto& [name, n] : nonFinite) list += (list.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
    warnings.push_back(std::to_string(nonFinite.size()) + " weight tensor" + (nonFinite.size() == 1 ? "" : "s") +
                       " hold NaN or infinite values: " + list + "; generate will stop at the first non-finite logit");
  }
  for (const auto& w : warnings) warn(w);
  const Checkpoint& ckpt = plan->checkpoint;
  const Qwen35Config& c = plan->config;
  // A tied config whose stored head is used has that head's parameters too.
  const int64_t parameters =
      c.parameterCount() + (c.tieWordEmbeddings && plan->headFromFile ? c.vocabSize * c.hiddenSize : 0);
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
                        {"parameters", parameters},
                        {"data_bytes", ckpt.dataBytes()},
                        {"storage_dtypes", dtypes},
                        {"config_dtype", c.dtype},
                        {"head", plan->headFromFile ? "lm_head.weight" : "tied to the embeddings"},
                        {"ignored_tensors", plan->ignored},
                        {"non_finite_weights", nonFinite},
                        {"warnings", warnings}};
    std::printf("%s\n", dumpJson(j).c_str());
    return kExitOk;
  }
  std::printf("checkpoint   %s (%s layout)\n", terminalText(o.dir).c_str(),
              c.layout == CheckpointLayout::Multimodal ? "multimodal qwen3_5" : "text-only qwen3_5_text");
  std::printf("layers       %lld: %lld Gated DeltaNet, %lld full attention\n", (long long)c.numLayers(),
              (long long)linear, (long long)(c.numLayers() - linear));
  std::printf("schedule     %s  (L = linear_attention, F = full_attention)\n", layerSchedule(c).c_str());
  std::printf("widths       hidden %lld, mlp %lld, vocab %lld, %s\n", (long long)c.hiddenSize,
              (long long)c.intermediateSize, (long long)c.vocabSize,
              plan->headFromFile ? (c.tieWordEmbeddings ? "head lm_head.weight (tie_word_embeddings ignored)" : "untied head")
                                 : "tied head");
  std::printf("attention    %lld q / %lld kv heads of %lld, rotary %lld, theta %g\n",
              (long long)c.numAttentionHeads, (long long)c.numKeyValueHeads, (long long)c.headDim,
              (long long)c.rotaryDim(), c.ropeTheta);
  std::printf("deltanet     %lld k / %lld v heads of %lld / %lld, conv %lld\n", (long long)c.linearNumKeyHeads,
              (long long)c.linearNumValueHeads, (long long)c.linearKeyHeadDim, (long long)c.linearValueHeadDim,
              (long long)c.linearConvKernelDim);
  std::printf("parameters   %lld (language model)\n", (long long)parameters);
  std::string st;
  for (const auto& [name, n] : dtypes) st += name + " x" + std::to_string(n) + " ";
  std::printf("storage      %s(%llu bytes; config says %s)\n", st.c_str(),
              (unsigned long long)ckpt.dataBytes(), c.dtype.c_str());
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
  options.cpuThreads = o.threads;
  std::optional<BpeTokenizer> bpe;
  std::optional<WordLevelTokenizer> words;  // a compiled circuit's checkpoint: its tokens by name
  std::error_code ec;
  const std::filesystem::path tokenizerPath = std::filesystem::path(o.dir) / "tokenizer.json";
  if (std::filesystem::exists(tokenizerPath, ec)) {
    auto text = readTextFile(tokenizerPath.string());
    if (!text) return report(text.error());
    auto type = tokenizerModelType(*text, tokenizerPath.string());
    if (!type) return report(type.error());
    if (*type == "WordLevel") {
      auto tok = WordLevelTokenizer::fromJson(*text, tokenizerPath.string());
      if (!tok) return report(tok.error());
      words = std::move(*tok);
    } else {
      auto tok = BpeTokenizer::load(o.dir);
      if (!tok) return report(tok.error());
      bpe = std::move(*tok);
    }
  }
  auto detok = [&](const std::vector<int64_t>& ids) {
    return words ? words->decode(ids) : bpe ? bpe->decode(ids) : ByteTokenizer::decode(ids);
  };
  std::vector<int64_t> prompt;
  if (!o.ids.empty()) {
    auto ids = parseIds(o.ids);
    if (!ids) return report(ids.error());
    prompt = *ids;
  } else if (words) {
    auto ids = words->encode(o.prompt);
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
  for (const auto& w : (*decoder)->warnings()) warn(w);
  auto t1 = Clock::now();
  // Step 0 is the prefill (which yields the first new token); step k > 0 feeds new token k.
  auto failedAt = [&](size_t step, const Diag& d) {
    Diag e = d;
    e.message = "generate step " + std::to_string(step) + ": " + e.message;
    return report(e);
  };
  auto first = (*decoder)->forward(prompt);
  if (!first) return failedAt(0, first.error());
  auto t2 = Clock::now();
  std::vector<int64_t> out = {first->argmax(0)};
  const auto& eos = (*decoder)->config().eosTokenIds;
  while (static_cast<int64_t>(out.size()) < o.maxNewTokens &&
         std::find(eos.begin(), eos.end(), out.back()) == eos.end()) {
    int64_t tok = out.back();
    auto step = (*decoder)->forward(std::span<const int64_t>(&tok, 1));
    if (!step) return failedAt(out.size(), step.error());
    out.push_back(step->argmax(0));
  }
  auto t3 = Clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double decodeTps = out.size() > 1 ? static_cast<double>(out.size() - 1) / secs(t2, t3) : 0.0;
  const double prefillTps = static_cast<double>(prompt.size()) / secs(t1, t2);
  const std::string text = detok(out);
  if (common.json) {
    nlohmann::json j = {{"tokens", out}, {"text", lossyUtf8(text)}, {"text_hex", hexBytes(text)},
                        {"text_is_utf8", lossyUtf8(text) == text}, {"load_s", secs(t0, t1)},
                        {"prefill_tokens_per_s", prefillTps}, {"decode_tokens_per_s", decodeTps},
                        {"dtype", o.dtype}, {"device", o.device}, {"warnings", (*decoder)->warnings()}};
    std::printf("%s\n", dumpJson(j).c_str());
    return kExitOk;
  }
  std::string ids;
  for (int64_t t : out) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  std::printf("tokens   %s\n", ids.c_str());
  std::printf("text     %s\n", terminalText(text).c_str());
  std::printf("speed    load %.2f s, prefill %zu tokens at %.1f tokens/s, decode %zu tokens at %.1f tokens/s (%s, %s)\n",
              secs(t0, t1), prompt.size(), prefillTps, out.size() - 1, decodeTps, o.dtype.c_str(), o.device.c_str());
  return kExitOk;
}

int runTiny(const ModelTinyOptions& o, const CommonOptions& common) {
  const StDtype storage = o.bf16 ? StDtype::BF16 : o.f16 ? StDtype::F16 : StDtype::F32;
  TinySpec spec{tinyConfig(o.hidden, o.layers, o.vocab), o.seed, storage};
  if (o.multimodal) spec.config.layout = CheckpointLayout::Multimodal;
  auto status = generateTinyCheckpoint(o.out, spec);
  if (!status) return report(status.error());
  if (common.json) {
    nlohmann::json j = {{"dir", o.out},
                        {"parameters", spec.config.parameterCount()},
                        {"seed", o.seed},
                        {"storage", stDtypeName(storage)},
                        {"layout", o.multimodal ? "qwen3_5" : "qwen3_5_text"}};
    std::printf("%s\n", dumpJson(j).c_str());
    return kExitOk;
  }
  std::printf("wrote %s (%lld parameters, seed %llu)\n", terminalText(o.out).c_str(),
              (long long)spec.config.parameterCount(), (unsigned long long)o.seed);
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
  auto* promptOpt = genApp->add_option("--prompt", gen->prompt, "Prompt text (byte-level tokens)");
  genApp->add_option("--ids", gen->ids, "Prompt token ids, comma-separated")->excludes(promptOpt);
  genApp->add_option("-n,--tokens", gen->maxNewTokens, "Tokens to generate")
      ->check(CLI::Range(int64_t{1}, kMaxNewTokens));
  genApp->add_option("--dtype", gen->dtype, "Compute dtype: f32 or bf16");
  genApp->add_option("--device", gen->device, "LibTorch device: cpu, cuda, cuda:N");
  genApp->add_option("--threads", gen->threads,
                     "LibTorch intra-op threads (0: LibTorch's default; the BLAS has its own pool)")
      ->check(CLI::Range(0, 256));

  auto tiny = std::make_shared<ModelTinyOptions>();
  auto* tinyApp = app->add_subcommand("tiny", "Write a seeded random Qwen3.5 checkpoint");
  tinyApp->add_option("out", tiny->out, "Output directory")->required();
  tinyApp->add_option("--hidden", tiny->hidden, "hidden_size")->check(CLI::Range(int64_t{1}, kMaxTinyHidden));
  tinyApp->add_option("--layers", tiny->layers, "num_hidden_layers (full attention every 4th)")
      ->check(CLI::Range(int64_t{1}, kMaxTinyLayers));
  tinyApp->add_option("--vocab", tiny->vocab, "vocab_size")->check(CLI::Range(int64_t{1}, kMaxTinyVocab));
  tinyApp->add_option("--seed", tiny->seed, "Random seed");
  auto* bf16Flag = tinyApp->add_flag("--bf16", tiny->bf16, "Store BF16 (A_log and the gated-norm weight stay F32)");
  tinyApp->add_flag("--f16", tiny->f16, "Store F16 (A_log and the gated-norm weight stay F32)")->excludes(bf16Flag);
  tinyApp->add_flag("--multimodal", tiny->multimodal, "Official qwen3_5 layout (model.language_model.)");

  Command cmd;
  cmd.app = app;
  cmd.run = [=, &common]() -> int {
    if (infoApp->parsed()) return runInfo(*info, common);
    if (genApp->parsed()) return runGenerate(*gen, common);
    if (tinyApp->parsed()) return runTiny(*tiny, common);
    return kExitUsage;
  };
  return cmd;
}

}  // namespace qgpu::cli
