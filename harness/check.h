// qgpu/harness/check.h — the conformance run over the kernel catalog: every kernel, through every
// compiler, on every backend available here, with one verdict per case and counts per verdict.
//
// Interp cases compare the interpreter's final memory with the kernel file's expected outputs.
// GPU cases compare the GPU's final memory (all 126 words, multiset for unordered outputs) with
// the interpreter's; with no GPU they are inconclusive ("no device"), never passed. Model cases
// (CheckOptions::modelLegs) are the model leg's: its final memory against the expected outputs
// and its tokens against the interpreter's, for the circuit target's program.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/pipeline.h"
#include "harness/verdict.h"

namespace qgpu::harness {

struct CheckOptions {
  std::vector<host::Compiler> compilers{host::Compiler::Clang, host::Compiler::Nvcc};
  bool gpu = true;       // try the GPU backend (inconclusive when there is none)
  int jobs = 2;          // kernels built and interpreted in parallel
  oracle::RunOptions run;
  // Called once per case as it finishes (interpreter cases in the order they finish, then the
  // GPU's), never concurrently; the partial reports of harness/cli/cmd_check.cpp use it.
  std::function<void(const CaseResult&)> onCase;
  // Called once per interpreter case after its result is final (recordBuild included), under the
  // same lock as onCase, never concurrently: `check --traces` writes the case's trace from it.
  std::function<void(const InterpCase&)> onInterpCase;
  // The model legs (Backend::ModelF32, ModelBf16), each run by `modelCase` for every kernel and
  // compiler after the GPU's cases, `jobs` at a time, so `modelCase` must be callable from
  // several threads (the model leg needs LibTorch, which this library does not link:
  // harness/cli/cmd_check.cpp supplies it through harness/model_leg.h's ModelLegs).
  std::vector<Backend> modelLegs;
  std::function<CaseResult(const kernels::KernelSpec&, host::Compiler, Backend)> modelCase;
};

// The digests a manifest records of what was built (docs/reports.md): the lowered program's text
// (machine::print, name included) and the launch's inputs (initial global memory, then the
// parameter values, each word as 4 little-endian bytes). `qgpu audit` recomputes both.
std::string programDigest(const machine::Program& program);
std::string inputDigest(std::span<const uint32_t> global, std::span<const uint32_t> params);

struct CheckReport {
  std::vector<CaseResult> cases;  // kernel order, then compiler, then backend
  std::map<std::pair<Backend, std::string>, Tally> tallies;  // (backend, compiler) -> counts
  std::string gpuDevice;          // the GPU used, or why none was ("no device: ...")
  std::string gpuName;            // the device's name when one was opened, else empty
  int gpuDriverVersion = 0;       // the CUDA driver's version number when a device was opened
  Tally total() const;
};

// The GPU backend for a run: opened once, then one case at a time. With no device every case is
// inconclusive with the reason.
class GpuSession {
 public:
  GpuSession();                       // tries to open the GPU
  ~GpuSession();
  bool available() const;
  std::string deviceName() const;     // empty when none
  int driverVersion() const;          // 0 when none
  const std::string& description() const { return description_; }  // device, or why none
  // Runs the kernel the interpreter case built and compares the whole memory with the
  // interpreter's final memory (multiset for unordered outputs).
  CaseResult compare(const kernels::KernelSpec& spec, const InterpCase& interp);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string description_;
};

CheckReport runCheck(const std::vector<kernels::KernelSpec>& catalog, const CheckOptions& options);

// Human-readable: one line per case that is not a match, then the counts per backend/compiler.
std::string formatReport(const CheckReport& report, bool verbose);
nlohmann::json toJson(const CheckReport& report);
nlohmann::json toJson(const CaseResult& result);

// The CLI exit code for a report: common/outcome.h's exitCode of its total tally.
int exitCodeFor(const CheckReport& report);

}  // namespace qgpu::harness
