// qgpu/harness/report/provenance.h — where and with what a run ran: the manifest's header.
//
// Contract: `collectProvenance` never fails and never hangs on a missing tool: every field it
// cannot learn is "unknown" (commit, dirty, host) or absent from `tools` (a compiler, CUDA or a
// driver that is not installed). The commit and dirty flag come from `git -C <sourceDir>` when
// the source tree is a git checkout (dirty: `git status --porcelain` prints anything, untracked
// files included); the tool versions from the first line of `<tool> --version` (clang-14 and
// nvcc as host/cuda/compile.h finds them) and from the build (the C++ compiler qgpu was built
// with, LibTorch when it was built with it). External commands run through `sh -c` with their
// output read to its end, each bounded by `timeout 10` when coreutils has it.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace qgpu::report {

struct Provenance {
  std::string commit = "unknown";  // `git rev-parse HEAD` of the source tree, or "unknown"
  std::string dirty = "unknown";   // "true", "false" or "unknown" (not a git checkout)
  std::string host = "unknown";    // gethostname()
  std::map<std::string, std::string> tools;  // name -> version line: "cxx", "clang", "nvcc",
                                             // "cudaDriver", "libtorch" (when known)
  std::string gpu;          // the device's name when a GPU leg ran on one, else empty
  std::string checkpoint;   // the model checkpoint's digest when a model leg ran, else empty
};

// `libtorchVersion`: the LibTorch the build linked ("" when none).
Provenance collectProvenance(const std::string& sourceDir, const std::string& libtorchVersion);

// The GPU a run opened: CheckReport::gpuName / gpuDriverVersion ("" / 0 when none was), as
// `gpu` and tools["cudaDriver"] ("13.0" from 13000).
void setGpu(Provenance& p, const std::string& gpuName, int driverVersion);

nlohmann::json toJson(const Provenance& p);

// Runs `command` with `sh -c`, stdout only; "" when it fails. Exposed for the tests.
std::string commandOutput(const std::string& command);

// `text` quoted for sh: inside single quotes, each ' as '\''.
std::string shellQuote(const std::string& text);

}  // namespace qgpu::report
