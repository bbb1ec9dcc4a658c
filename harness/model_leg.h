// qgpu/harness/model_leg.h — the model leg (docs/circuit.md §9 "The leg"): a kernel's lowered
// program run token by token in the compiled Qwen3.5 model, through model/'s decoder like any
// checkpoint, and its final memory compared with the kernel file's expected outputs.
//
//   runLeg       the prompt (trace::encodePrompt of the program and launch) prefilled, then one
//                greedy token per forward until END, FAULT or LIMIT, or `tokenBudget` tokens.
//                The run's tokens are decoded (trace::decodeRun: a malformed run is a
//                TraceInvalid error naming the token) into the final global memory
//                (circuit::finalGlobal). It never calls the interpreter: every token is the
//                model's argmax.
//   ModelSession the model: loaded from a checkpoint directory `qgpu circuit build` wrote
//                (config.json, model.safetensors and circuit.json, the build's step limit), or
//                built into a temporary directory (removed when the session ends).
//   compare      the model case (Backend::ModelF32 or ModelBf16, by the dtype) of a built kernel: refused before running when the
//                pipeline does not execute one of its ops (circuit::pipelineExecutes: an
//                OverLimit error, verdict inconclusive); otherwise the leg's final memory against
//                the expected outputs (kernels::checkOutputs, writesOutsideArrays), a FAULT or
//                LIMIT as the interpreter's would be (mismatch, inconclusive). With `check`, the
//                interpreter runs beside it at the model's step limit, and the first token that
//                differs decides: its position, both tokens and the interpreter's decoded event
//                there.
//   ModelLegs    the model legs of a conformance run (`qgpu check --model`): one checkpoint for
//                every dtype, a session per dtype, and each kernel's model case — the circuit
//                target's program built (circuitBuildOptions), refused without running
//                when it does not build or the pipeline does not execute it, else compared.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "circuit/margins.h"
#include "common/diag.h"
#include "harness/pipeline.h"
#include "harness/verdict.h"
#include "kernels/catalog.h"
#include "model/decoder.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::harness {

enum class LegStop : uint8_t { End, Fault, Limit, Budget };
const char* legStopName(LegStop s);

struct LegRun {
  std::vector<trace::Token> prompt, run;  // run: the generated tokens
  LegStop stop = LegStop::Budget;
  std::array<uint32_t, machine::kGlobalWords> global{};  // the final global memory
  double prefillSeconds = 0, decodeSeconds = 0;
  int64_t firstTraceRow = 0;  // trace token t is the model's row firstTraceRow + t
  // The model's token ids of the prompt (and the run).
  std::vector<int64_t> modelIds(bool withRun) const;
};

// `firstTraceRow`: the checkpoint's (circuit::readLegCheckpoint); the vocabulary must hold the
// trace's rows from there (Checkpoint otherwise), and an argmax outside them is TraceInvalid.
Expected<LegRun> runLeg(model::Decoder& decoder, const machine::Program& program,
                        const machine::Launch& launch, size_t tokenBudget,
                        int64_t firstTraceRow = 0);

// The leg against itself (STYLE.md 6): the decoder's other path — the chunked prefill over the
// prompt and the generated run, 512 tokens a forward — must give the run's token as its argmax
// at every run position. The greedy run came from the one-token path, whose rounding differs; a
// circuit exact on both writes the same tokens. Returns the first run position where the two
// paths disagree ("run token 17: the one-token path T(3), the chunked path T(2)"), or "".
Expected<std::string> replayOnTheChunkedPath(model::Decoder& decoder, const LegRun& leg);

// --check's comparison: where the model's run `got` first differs from the interpreter's `want`
// (both without the prompt of `promptTokens` tokens), described by the interpreter's side — the
// position, the run index, the step (EX tokens before it), the record in progress and both
// tokens; empty when they are equal.
std::string firstTokenDifference(const std::vector<trace::Token>& want, const std::vector<trace::Token>& got,
                                 size_t promptTokens);

struct ModelLegOptions {
  model::ComputeDtype dtype = model::ComputeDtype::F32;
  std::string checkpoint;     // empty: build the model into a temporary directory
  size_t tokenBudget = 20000;
  bool check = false;         // --check: token for token against the interpreter
  int blasThreads = 0;        // model::DecoderOptions::blasThreads (ModelLegs: 1 for 2+ workers)
};

// The backend of a model case in `dtype`.
Backend modelBackend(model::ComputeDtype dtype);

// The model case of a kernel that never reached the model: `why` (an expansion that did not fit,
// an op the pipeline does not execute, a build error) decides the verdict (caseVerdict: OverLimit
// is inconclusive, as any program beyond the machine is).
CaseResult refusedModelCase(const std::string& kernel, host::Compiler compiler, Backend leg, const Diag& why);

// The decision margins of one leg run (`qgpu circuit margins`): every nonlinearity's input the
// circuit decides with (circuit/margins.h) measured on the model's own run, on both of the
// runtime's paths.
struct LegMargins {
  circuit::MarginReport prefill;  // the chunked path: the prompt and the run, 256 tokens a forward
  circuit::MarginReport decode;   // the one-token path: each run token after the untapped prompt
  size_t promptTokens = 0, runTokens = 0;
  LegStop stop = LegStop::Budget;
};

class ModelSession {
 public:
  static Expected<std::unique_ptr<ModelSession>> open(const ModelLegOptions& options);
  ~ModelSession();
  ModelSession(const ModelSession&) = delete;
  ModelSession& operator=(const ModelSession&) = delete;

  int stepLimit() const { return stepLimit_; }
  std::string description() const;
  // The case of a built kernel; `final` receives the model's final memory when it ran.
  CaseResult compare(const kernels::KernelSpec& spec, const BuiltKernel& kernel,
                     std::array<uint32_t, machine::kGlobalWords>* final = nullptr);
  // Runs the leg on the kernel (greedy, as compare), then measures its margins (LegMargins).
  Expected<LegMargins> margins(const BuiltKernel& kernel);
  // The last compare's run: "prefill 189 tokens in 1.10 s (172 tokens/s), decode 201 tokens in
  // 5.55 s (36 tokens/s)", or empty when no model ran.
  const std::string& lastTiming() const { return lastTiming_; }

 private:
  ModelSession() = default;
  ModelLegOptions options_;
  std::string dir_, tempDir_;
  int stepLimit_ = 0;
  int64_t firstTraceRow_ = 0;
  std::unique_ptr<model::Decoder> decoder_;
  std::string lastTiming_;
};

class ModelLegs {
 public:
  // Opens `perLeg` sessions per dtype of `legs` (ModelF32, ModelBf16) on `options.checkpoint`, or
  // on one checkpoint built into a temporary directory (removed with this object) when it is
  // empty. run() may then be called from up to `perLeg` threads at once per leg.
  static Expected<std::unique_ptr<ModelLegs>> open(const ModelLegOptions& options, const std::vector<Backend>& legs,
                                                   int perLeg = 1);
  ~ModelLegs();
  ModelLegs(const ModelLegs&) = delete;
  ModelLegs& operator=(const ModelLegs&) = delete;

  // "the memory pipeline, ..." of the first session (they share the checkpoint).
  std::string description() const;
  // The case of `spec` under `compiler` on `leg` (one of those opened), on a free session of it.
  CaseResult run(const kernels::KernelSpec& spec, host::Compiler compiler, Backend leg);

 private:
  ModelLegs() = default;
  std::string tempDir_;
  std::map<Backend, std::vector<std::unique_ptr<ModelSession>>> sessions_;
  std::map<Backend, std::vector<ModelSession*>> free_;  // guarded by mutex_
  std::mutex mutex_;
  std::condition_variable returned_;
};

}  // namespace qgpu::harness
