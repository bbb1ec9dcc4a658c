// qgpu/harness/verdict.h — the outcome of one differential case, and the tally of many.
//
// The verdicts, what each error means and the exit codes are common/outcome.h's (qgpu::Verdict,
// qgpu::Tally, qgpu::classify, qgpu::exitCode); this file only gives a case its shape. Every case
// has the same shape: a kernel, the compiler that produced its PTX, the backend that ran it, a
// verdict, and the evidence (digests, counts, first difference).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/diag.h"
#include "common/outcome.h"

namespace qgpu::harness {

enum class Backend : uint8_t {
  Interp,     // the reference interpreter, checked against the kernel file's expected outputs
  Gpu,        // a real NVIDIA GPU through the driver API, checked against the interpreter
  ModelF32,   // the compiled Qwen3.5 model in fp32, token by token (harness/model_leg.h)
  ModelBf16,  // the same model computing in bf16
};
inline constexpr int kNumBackends = 4;
const char* backendName(Backend b);  // "interp", "gpu", "model-fp32", "model-bf16"
inline bool isModel(Backend b) { return b == Backend::ModelF32 || b == Backend::ModelBf16; }

struct CaseResult {
  std::string kernel;
  std::string compiler;      // "clang" or "nvcc"
  Backend backend = Backend::Interp;
  Verdict verdict = Verdict::HarnessError;
  std::string detail;        // why: the first differing word, the error, the skip reason
  std::optional<ErrorKind> error;  // the kind of the error that decided the verdict, if one did
  // Evidence, filled as far as the case got.
  std::string ptxDigest;     // FNV-1a 64 of the PTX text, hex
  std::string traceDigest;   // FNV-1a 64 of the token trace, hex
  uint64_t traceTokens = 0;
  uint64_t steps = 0;        // block executions
  uint64_t laneInstrs = 0;
  int machineBlocks = 0;
  int spillSlots = 0;
  // Provenance (harness/report/manifest.h), filled by runCheck as far as the case got.
  std::string programDigest; // FNV-1a 64 of the lowered machine program's text (machine::print)
  std::string inputDigest;   // FNV-1a 64 of the launch's initial global memory and parameters
  uint32_t gridX = 0, blockX = 0;  // the launch (0 when the case was not built)
  double wallSeconds = 0;    // wall time of this case (build + both interpreter runs, or the GPU run)
  double cpuSeconds = 0;     // CPU time of qgpu's own thread for it (compiler subprocesses excluded)
};

}  // namespace qgpu::harness
