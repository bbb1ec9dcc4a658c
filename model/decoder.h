// qgpu/model/decoder.h — the Qwen3.5 text decoder in LibTorch, run token by token.
//
// Contract: `Decoder::load(dir)` reads config.json and the safetensors of a Hugging Face Qwen3.5
// checkpoint (text-only `qwen3_5_text` or the official multimodal `qwen3_5`, whose vision and MTP
// tensors are skipped), validates it with planLoad() (load_plan.h: the rules `qgpu model info`
// applies too, each following transformers), and converts F32/BF16/F16 weights to the compute dtype (F32 weights stay memory-mapped when the compute dtype is
// F32 on the CPU; BF16 ones are upcast). The math is transformers' `Qwen3_5ForCausalLM`
// (see /work/shared/reference/qwen35-spec.md), including its path choice: a forward over several
// tokens, or the first forward of a sequence, runs the chunked delta rule (chunk 64) and the
// padded conv; a single token with existing state runs the token recurrence and the conv window.
//
// This header includes no LibTorch header, so plain C++ code (the harness) may hold a Decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/diag.h"
#include "model/activation.h"
#include "model/config.h"

namespace qgpu::model {

enum class ComputeDtype : uint8_t {
  F32,   // float32 weights, activations and caches
  BF16,  // bfloat16 weights and activations; recurrent state and softmax in float32, as HF
};

const char* computeDtypeName(ComputeDtype dtype);

struct DecoderOptions {
  ComputeDtype dtype = ComputeDtype::F32;
  std::string device = "cpu";  // a LibTorch device string: "cpu", "cuda", "cuda:1"
  // LibTorch's intra-op (OpenMP) threads, set process-wide when the decoder loads; 0 leaves
  // LibTorch's default. The matrix products run in the BLAS's own thread pool (OpenBLAS, see
  // README "Dependencies"), so LibTorch's pool only runs small element-wise ops; two pools on
  // two cores spun against each other (OMP_NUM_THREADS=2: 1.6 decode tokens/s against 22 with
  // one LibTorch thread, hidden 512, 8 layers), hence 1.
  int cpuThreads = 1;
  // The BLAS's own threads, set process-wide when the decoder loads (OpenBLAS's
  // openblas_set_num_threads, found at run time; another BLAS is left as it is); 0 leaves them.
  // Several decoders decoding at once on their own threads (`qgpu check`'s model workers) want 1:
  // each caller's product then runs on its caller's core, where two callers' two-thread pools
  // spun against each other on two cores.
  int blasThreads = 0;
  // A projection weight that is mostly exact zeros is held and multiplied compactly: as its
  // nonzero block (whole rows and columns zero) or, on the CPU, as sparse rows (at most 1/32
  // nonzero); model/linear.h. The same values: every skipped term is a product with 0, only the
  // summation order of the kept ones may differ from the BLAS's. A trained model has no such
  // weights; a compiled circuit's layers are mostly zeros (every layer as wide as its widest), so
  // this is what makes them fast. The same zeros let a one-token decode skip state rows that stay
  // exact zeros and a full-attention layer whose o_proj is zero (decoder.cpp liveStateRows). false:
  // every weight dense, as stored, and every row and layer computed.
  bool compactZeroBlocks = true;
};

// Logits of some positions, row-major [rows, vocab], always float32.
struct Logits {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<float> data;
  std::span<const float> row(int64_t r) const {
    return {data.data() + r * vocab, static_cast<size_t>(vocab)};
  }
  int64_t argmax(int64_t r) const;
};

// A forward's logits and its intermediates, in the order the forward computed them.
struct TappedForward {
  Logits logits;
  std::vector<Activation> activations;
};

class Decoder {
 public:
  static Expected<std::unique_ptr<Decoder>> load(const std::string& dir,
                                                 const DecoderOptions& options = {});
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  const Qwen35Config& config() const;
  const DecoderOptions& options() const;
  // What the loader told the user (tensors ignored, head chosen): LoadPlan::warnings().
  const std::vector<std::string>& warnings() const;
  // Bytes of weights held by the decoder (after conversion to the compute dtype).
  uint64_t weightBytes() const;

  // Forgets the sequence: caches emptied, position 0.
  void reset();
  // Number of tokens consumed since the last reset.
  int64_t position() const;

  // Appends `tokens` to the sequence. Returns the logits of every new position when `allLogits`,
  // else of the last one only. Token ids outside [0, vocab) are a Usage error (and change
  // nothing). A NaN or Inf among the returned logits is a Checkpoint error naming the sequence
  // position and the weights that hold non-finite values; the sequence state is then spoiled
  // (call reset()).
  Expected<Logits> forward(std::span<const int64_t> tokens, bool allLogits = false);
  // forward() that also returns every intermediate of `Activation`'s table (copied to float32 on
  // the CPU: slower, for measurements). The arithmetic is forward()'s, unchanged.
  Expected<TappedForward> forwardTapped(std::span<const int64_t> tokens, bool allLogits = false);

  // Greedy decoding: consumes `prompt` (prefill), then appends `maxNewTokens` argmax tokens, one
  // forward per token, stopping early after any token in `stopTokens`. Returns the new tokens.
  Expected<std::vector<int64_t>> generateGreedy(std::span<const int64_t> prompt,
                                                int64_t maxNewTokens,
                                                std::span<const int64_t> stopTokens = {});

  struct Impl;

 private:
  explicit Decoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgpu::model
