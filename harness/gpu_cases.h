// qgpu/harness/gpu_cases.h — the host side of the real-GPU leg (docs/gpu.md): catalog kernels to
// GPU cases, and the interpreter run of a case, for `qgpu gpu export/record/compare` and the
// recording tests. gpu/ holds only what a GPU machine builds (runner, recording and inputs
// formats); everything that needs the host pipeline is here, on top of pipeline.h.
//
// Contract: `buildCase` runs the host pipeline once for one (kernel, compiler): compileKernel
// (layout, compile, parse, entry), then lowerKernel and one interpreter run. The PTX, launch and
// interpreter result become a gpu::GpuCase (gpu/inputs.h). Errors up to and including finding the
// entry (layout, compiler, PTX syntax) fail the case: without PTX there is nothing to run on a
// GPU. Errors after that (lowering refused it, the interpreter faulted) are kept in
// GpuCase::expectedError, since the GPU can still run the PTX and its result is worth recording.
// `interpretCase` repeats parse → lower → interpret on a case's PTX and launch, with today's code.
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "gpu/inputs.h"
#include "host/cuda/compile.h"
#include "harness/pipeline.h"
#include "kernels/catalog.h"

namespace qgpu::harness {

// The GPU launch of a compiled kernel: its PTX under its entry name, the catalog's memory image
// and parameters (pointers marked), and its multiset outputs as unordered ranges.
gpu::GpuLaunch gpuLaunch(const kernels::KernelSpec& spec, const BuiltKernel& kernel);

Expected<gpu::GpuCase> buildCase(const kernels::KernelSpec& spec, host::Compiler compiler);

// The interpreter's final image for a case (gpu::InterpretFn), or why there is none.
Expected<std::vector<uint32_t>> interpretCase(const gpu::GpuCase& gpuCase);

// Every kernel of `specs` with every compiler, in catalog order (compilers in the given order).
// Stops at the first case that fails, naming it.
Expected<gpu::Inputs> buildInputs(const std::vector<kernels::KernelSpec>& specs,
                                  const std::vector<host::Compiler>& compilers,
                                  const std::string& commit);

// The commit checked out in `sourceDir` (read from .git, no subprocess; a worktree's or
// submodule's .git file followed to its git directory), or "unknown".
std::string gitCommit(const std::string& sourceDir);

}  // namespace qgpu::harness
