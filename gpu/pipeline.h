// qgpu/gpu/pipeline.h — the host side of the GPU leg: catalog kernels to GPU cases, and the
// interpreter run of a case, for `qgpu gpu export/record/compare` and the recording test.
//
// Contract: `buildCase` runs the host pipeline once for one (kernel, compiler): layout (the
// catalog's memory image and parameters), compile to PTX, parse, lower, interpret. The PTX, launch
// and interpreter result become a GpuCase (inputs.h). Errors up to and including parsing (layout,
// compiler, PTX syntax) fail the case: without PTX there is nothing to run on a GPU. Errors after
// that (lowering refused it, the interpreter faulted) are kept in GpuCase::expectedError, since the
// GPU can still run the PTX and its result is still worth recording.
// `interpretCase` repeats parse → lower → interpret on a case's PTX, with today's code.
// The GPU entry is the module's only .entry, or the one named like the kernel.
// Depends on kernels/, host/ and oracle/, never the other way round.
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "gpu/inputs.h"
#include "host/cuda/compile.h"
#include "kernels/catalog.h"

namespace qgpu::gpu {

Expected<GpuCase> buildCase(const kernels::KernelSpec& spec, host::Compiler compiler);

Expected<std::vector<uint32_t>> interpretCase(const GpuCase& gpuCase);

// Every kernel of `specs` with every compiler, in catalog order (clang first). Stops at the first
// case that fails.
Expected<Inputs> buildInputs(const std::vector<kernels::KernelSpec>& specs,
                             const std::vector<host::Compiler>& compilers,
                             const std::string& commit);

// The commit checked out in `sourceDir` (read from .git, no subprocess), or "unknown".
std::string gitCommit(const std::string& sourceDir);

}  // namespace qgpu::gpu
