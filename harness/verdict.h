// qgpu/harness/verdict.h — the outcome of one differential case, and the tally of many.
//
// Four verdicts, never two (STYLE.md §5): a case that could not be decided (no GPU, a tool
// missing, an unsupported construct) is Inconclusive and is counted apart from Match; a failure of
// qgpu itself is HarnessError. Every case has the same shape: a kernel, the compiler that produced
// its PTX, the backend that ran it, a verdict, and the evidence (digests, counts, first difference).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::harness {

enum class Verdict : uint8_t {
  Match,         // the backend's result equals the reference
  Mismatch,      // it differs: `detail` names the first difference
  Inconclusive,  // could not be decided: no device, tool missing, unsupported construct
  HarnessError,  // qgpu failed: a compile error in a catalog kernel, a self-check failure
};
inline constexpr int kNumVerdicts = 4;
const char* verdictName(Verdict v);  // "match", "mismatch", "inconclusive", "harness-error"

enum class Backend : uint8_t {
  Interp,  // the reference interpreter, checked against the kernel file's expected outputs
  Gpu,     // a real NVIDIA GPU through the driver API, checked against the interpreter
  Model,   // the merged Qwen3.5 model, token by token, checked against the interpreter's trace
};
const char* backendName(Backend b);

struct CaseResult {
  std::string kernel;
  std::string compiler;      // "clang" or "nvcc"
  Backend backend = Backend::Interp;
  Verdict verdict = Verdict::HarnessError;
  std::string detail;        // why: the first differing word, the error, the skip reason
  // Evidence, filled as far as the case got.
  std::string ptxDigest;     // FNV-1a 64 of the PTX text, hex
  std::string traceDigest;   // FNV-1a 64 of the token trace, hex
  uint64_t traceTokens = 0;
  uint64_t steps = 0;        // block executions
  uint64_t laneInstrs = 0;
  int machineBlocks = 0;
  int spillSlots = 0;
};

// Counts per verdict, kept per (backend, compiler) for the summary table.
struct Tally {
  std::array<int, kNumVerdicts> counts{};
  void add(Verdict v) { ++counts[static_cast<int>(v)]; }
  int operator[](Verdict v) const { return counts[static_cast<int>(v)]; }
  int total() const { return counts[0] + counts[1] + counts[2] + counts[3]; }
};

}  // namespace qgpu::harness
