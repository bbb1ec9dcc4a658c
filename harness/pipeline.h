// qgpu/harness/pipeline.h — one kernel from CUDA source to a verdict on the interpreter.
//
// The host's path for a catalog kernel: CUDA → PTX (clang-14 or nvcc) → parsed PTX → machine
// program (lowering, with the kernel's parameter values from the memory layout) → interpreter.
// `buildKernel` stops at the program; `runInterpCase` runs it and checks the final memory against
// the kernel file's expected outputs (computed by kernels/reference, never by a qgpu leg).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/diag.h"
#include "harness/verdict.h"
#include "host/cuda/compile.h"
#include "host/lower/expand_division.h"
#include "host/lower/expand_multiply.h"
#include "host/lower/lower.h"
#include "host/ptx/ir.h"
#include "kernels/catalog.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"

namespace qgpu::harness {

struct BuiltKernel {
  host::Compiler compiler = host::Compiler::Clang;
  std::string ptx;
  std::string ptxDigest;        // digestString(fnv1a64(ptx))
  ptx::Module module;
  std::string entry;            // the kernel's .entry name in the PTX (mangled unless extern "C")
  machine::Program program;
  lower::LowerStats stats;
  lower::ExpandDivisionStats division;  // BuildOptions::expandDivision: what the pass did
  lower::ExpandMultiplyStats multiply;  // BuildOptions::expandMultiply: what the pass did
  kernels::LaunchImage image;   // global memory, parameter values, launch shape
};

// How a kernel is built beyond the default path.
struct BuildOptions {
  // Replace every div/rem by a shift-subtract loop after lowering (host/lower/expand_division.h),
  // as the circuit target needs: `--expand-division` on run, trace and compile.
  bool expandDivision = false;
  // Replace every mul/mad/mulhi by a shift-add chain or loop after that
  // (host/lower/expand_multiply.h): `--expand-multiply`.
  bool expandMultiply = false;
  // With expandMultiply: only mulhi (ExpandMultiplyOptions::highOnly): `--expand-mulhi`.
  bool multiplyHighOnly = false;
};

// The circuit target's build, the model backend's: division expanded, and mulhi (its pipeline
// multiplies the low half itself: docs/circuit.md "MUL in the pipeline").
inline BuildOptions circuitBuildOptions() {
  return BuildOptions{.expandDivision = true, .expandMultiply = true, .multiplyHighOnly = true};
}

// The circuit target's expansions `build` asks for, division first, on a lowered program whose op
// locations `opLocs` gives (LowerStats::opLocs): errors name PTX lines through both passes.
Expected<machine::Program> expandProgram(machine::Program program, const BuildOptions& build,
                                         const std::vector<std::vector<SourceLoc>>& opLocs,
                                         lower::ExpandDivisionStats* division = nullptr,
                                         lower::ExpandMultiplyStats* multiply = nullptr);

// Compiles, parses, lowers and verifies the program with its launch (machine::verify(program,
// launch): spill slots × threads must fit in shared memory next to the program's shared words,
// which lowering alone, without the launch, cannot check). The Diag's kind says which stage failed.
Expected<BuiltKernel> buildKernel(const kernels::KernelSpec& spec, host::Compiler compiler,
                                  const BuildOptions& build = {});

// buildKernel in its two halves, for callers that keep the PTX when lowering fails (the GPU leg,
// gpu_cases.h: the GPU can run PTX the machine cannot). `compileKernel` does layout, compile,
// parse and finds the entry (program and stats left empty); `lowerKernel` lowers `module` at
// `entry` with `image.params` into `program` and `stats`, then verifies it with the launch.
Expected<BuiltKernel> compileKernel(const kernels::KernelSpec& spec, host::Compiler compiler);
Status lowerKernel(BuiltKernel& built, const BuildOptions& build = {});

// A case that failed to build has no run: both are Expected, so an unbuilt kernel's memory (or a
// run that is no reference) cannot be read by mistake.
struct InterpCase {
  CaseResult result;
  // The built kernel (compiled, lowered, verified with its launch), or why the build failed.
  Expected<BuiltKernel> kernel = notBuilt();
  // The first of the two runs, or why there is none: the build failed, or the two runs differ (a
  // nondeterministic interpreter is no reference). A run that faulted or hit the step limit is a
  // value (its status says so).
  Expected<oracle::RunResult> run = notBuilt();

  bool built() const { return kernel.ok(); }
  static Diag notBuilt() { return makeDiag(ErrorKind::Internal, "the case was not built"); }
};

// Builds the kernel, runs it twice in the interpreter (the two runs must agree token for token and
// word for word, else HarnessError: a nondeterministic interpreter cannot be a reference), and
// compares the final memory with the expected outputs and every word outside the arrays with its
// initial value (writesOutsideArrays).
InterpCase runInterpCase(const kernels::KernelSpec& spec, host::Compiler compiler,
                         const oracle::RunOptions& options = {}, const BuildOptions& build = {});

// A kernel may write only its out/inout arrays. The words of global memory that belong to no array
// parameter (gaps, the memory after the arrays) and differ between `initial` and `final`, one
// message per word: "word 9 (no parameter's) changed: 0x00000000 -> 0x00000007". Words of `in`
// arrays are kernels::checkOutputs's (it names the array and index). Both legs call it: the
// interpreter's final memory (runInterpCase) and the GPU's (GpuSession::compare).
std::vector<std::string> writesOutsideArrays(const kernels::LaunchImage& image,
                                             std::span<const uint32_t> initial,
                                             std::span<const uint32_t> final);

// Resolves a kernel argument: a path to a .cu file, or the name of a catalog kernel.
Expected<kernels::KernelSpec> resolveKernel(const std::string& nameOrPath,
                                            const std::string& catalogDir);

}  // namespace qgpu::harness
