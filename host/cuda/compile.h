// qgpu/host/cuda/compile.h — the CUDA -> PTX compiler driver (clang-14 or nvcc) and ptxas checks.
//
// Contract: plain C++, no CUDA headers. Each tool runs as a subprocess (posix_spawn, never through
// a shell) in a private mkdtemp directory that is removed afterwards; its stdout and stderr are
// captured, and a run that exceeds `timeoutSeconds` is killed and reported as CompileFailed
// "timed out". Errors are values:
//   ToolMissing    the tool was not found (or an override names a file that is not executable);
//   CompileFailed  the tool rejected the input: message = its first error line, then the full
//                  output on the following lines; loc = file:line:col parsed from that line.
// Tool lookup: clang  — $QGPU_CLANG, else clang-14 on PATH, else /usr/lib/llvm-14/bin/clang;
//              nvcc   — $QGPU_NVCC, else /usr/local/cuda/bin/nvcc, else nvcc on PATH;
//              ptxas  — $QGPU_PTXAS, else /usr/local/cuda/bin/ptxas, else ptxas on PATH.
// An override that is set but names no executable file is ToolMissing, not a fallback: a test
// that points QGPU_CLANG at a wrong path must see the tool as missing.
// Cache: with $QGPU_COMPILE_CACHE set to a directory, compileToPtx keeps each successful result
// there (<digest>.ptx, written atomically) under a key of everything the output depends on: the
// tool binary's path, size and modification time, every option, the dialect header's and the
// clang include directory's contents, and the source. Failures are never cached. ci/test.sh sets
// it for the test run, so the catalog is compiled once, not once per test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/diag.h"

namespace qgpu::host {

enum class Compiler : uint8_t {
  Clang,  // clang-14 -x cuda --cuda-device-only with the qgpu dialect header (kernels/qgpu_cuda.h)
  Nvcc,   // nvcc -ptx (CUDA's own headers)
};

const char* compilerName(Compiler compiler);  // "clang" / "nvcc"

struct CompileOptions {
  std::string arch = "sm_75";      // --cuda-gpu-arch / -arch
  std::string optLevel = "-O2";    // clang's level; nvcc always gets -O3 (its PTX-level default)
  std::string fileName = "kernel.cu";  // shown in messages and locations instead of the temp path
  std::string dialectHeader;       // clang only; empty: $QGPU_CUDA_HEADER, else
                                   // QGPU_SOURCE_DIR/kernels/qgpu_cuda.h
  int timeoutSeconds = 60;         // per tool run; exceeded -> CompileFailed "timed out"
};

// CUDA source -> PTX text.
Expected<std::string> compileToPtx(std::string_view cudaSource, Compiler compiler,
                                   const CompileOptions& options = {});

// Assembles PTX with `ptxas -arch=<arch>` (the output is discarded). Errors: CompileFailed with
// ptxas's message and the PTX line in loc ("<ptx>:line"), ToolMissing if ptxas is absent.
Status ptxasCheck(std::string_view ptx, const std::string& arch);

bool toolAvailable(Compiler compiler);
bool ptxasAvailable();

// The path that would be run for a tool, or ToolMissing naming what was searched.
Expected<std::string> toolPath(Compiler compiler);
Expected<std::string> ptxasPath();

}  // namespace qgpu::host
