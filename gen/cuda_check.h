// qgpu/gen/cuda_check.h — the property of random CUDA (gen/cuda_gen.h) under clang-14 and nvcc.
//
// For every case and every compiler asked for:
//   - the case's file is a valid kernel file whose expectations are the generator's
//     (kernels::parseKernelText), so it also runs through `qgpu run` / the harness;
//   - the compiler accepts it;
//   - the PTX evaluator (ptxeval/) runs the compiler's PTX to the end, meets no unspecified
//     operation, and leaves exactly the generator's expected global memory;
//   - lowering succeeds, or refuses with a typed error (OverLimit: "refused (limit)",
//     PtxUnsupported: "refused (unsupported)"), never anything else (VIR is verified after every
//     pass); the program verifies with the launch (OverLimit again is a refusal);
//   - the interpreter finishes and leaves exactly the generator's expected global memory;
//   - where both compilers' programs ran, their final memories are equal (implied by the above,
//     checked on its own so a report names it).
// A Diag (naming the case's header, the compiler and the first differing word) when the property
// fails; refusals are verdicts, not failures.
//
// Compiling dominates (about 0.15 s per clang-14 and 1 s per nvcc run), so `checkCudaBatch`
// compiles all the cases of a batch as ONE translation unit per compiler (the kernels have
// distinct names; each is lowered and evaluated at its own entry). A batch the compiler rejects is
// compiled again case by case, so the failure names its case.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "common/diag.h"
#include "gen/cuda_gen.h"
#include "host/cuda/compile.h"
#include "host/ptx/ir.h"

namespace qgpu::gen {

enum class CudaVerdict : uint8_t {
  Match,               // interpreter == PTX evaluator == the generator's expectation
  RefusedLimit,        // lowering or verify with the launch: OverLimit (the machine is too small)
  RefusedUnsupported,  // lowering, or the PTX evaluator (then the interpreter still equalled the
                       // expectation): PtxUnsupported (a construct outside the subset)
};
const char* cudaVerdictName(CudaVerdict v);  // "match", "refused-limit", "refused-unsupported"

struct CudaLeg {
  host::Compiler compiler = host::Compiler::Clang;
  CudaVerdict verdict = CudaVerdict::Match;
  Diag refusal;  // when refused: lowering's (or, if lowering ran, the PTX evaluator's) typed error
  std::array<uint32_t, 126> final{};  // when Match: the interpreter's final global memory
};
struct CudaCheck {
  std::vector<CudaLeg> legs;  // one per compiler, in the order asked for
};

struct CudaBatchStats {
  int compilerRuns = 0;         // compiler invocations (one per compiler per batch, more on retry)
  double compileSeconds = 0;    // wall time inside the compilers
  double checkSeconds = 0;      // parse, evaluate, lower, interpret
};

// Outer Diag: a compiler is missing (ToolMissing: inconclusive, nothing was checked). Inner: one
// result per case, a Diag when the property failed for it.
Expected<std::vector<Expected<CudaCheck>>> checkCudaBatch(std::span<const CudaCase> cases,
                                                          std::span<const host::Compiler> compilers,
                                                          CudaBatchStats* stats = nullptr);

// One leg of the property on an already parsed module (what checkCudaBatch does per case and
// compiler): the PTX evaluator, then lowering + the interpreter, each against the expectation. A
// PtxUnsupported of the evaluator or of lowering is a typed refusal (RefusedUnsupported; with
// the evaluator's, the interpreter must still equal the expectation); other errors are failures.
Expected<CudaLeg> checkCudaLeg(const CudaCase& c, host::Compiler compiler, const ptx::Module& module);

// All the cases' files as one translation unit (what checkCudaBatch compiles).
std::string cudaBatchSource(std::span<const CudaCase> cases);

// A batch's PTX (compiled from cudaBatchSource) parsed, with the functions of every case whose
// PTX the front end refuses cut out first, as checkCudaBatch does (for the benchmark, which
// times parse -> lower -> interpret without the compiler). `refused`: those cases' indices. A
// parse error that no case owns is returned.
struct ParsedCudaBatch {
  ptx::Module module;
  std::vector<size_t> refused;
};
Expected<ParsedCudaBatch> parseCudaBatchPtx(std::string ptxText, std::span<const CudaCase> cases);

}  // namespace qgpu::gen
