// qgpu/harness/gpu_cases.cpp — catalog kernels to GPU cases (see gpu_cases.h).
#include "harness/gpu_cases.h"

#include <algorithm>
#include <fstream>

#include "gpu/recording.h"
#include "harness/pipeline.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::harness {

namespace {

std::string caseFile(const gpu::GpuCase& c) { return c.kernel + "." + c.compiler + ".ptx"; }

// One run without a trace: the GPU leg compares final images only. A fault is the case's
// expected error (it is recorded and compared, not a harness failure).
Expected<std::vector<uint32_t>> interpretLowered(const BuiltKernel& kernel) {
  oracle::RunOptions options;
  options.recordTrace = false;
  QGPU_TRY(result, oracle::run(kernel.program, kernel.image.toMachineLaunch(), options));
  if (result.status != oracle::RunStatus::Finished) return result.fault;
  return std::vector<uint32_t>(result.global.begin(), result.global.end());
}

Expected<std::vector<uint32_t>> lowerAndInterpret(BuiltKernel& kernel) {
  QGPU_CHECK(lowerKernel(kernel));
  return interpretLowered(kernel);
}

}  // namespace

gpu::GpuLaunch gpuLaunch(const kernels::KernelSpec& spec, const BuiltKernel& kernel) {
  gpu::GpuLaunch launch;
  launch.ptx = kernel.ptx;
  launch.entry = kernel.entry;
  launch.gridX = kernel.image.gridX;
  launch.blockX = kernel.image.blockX;
  launch.global.assign(kernel.image.global.begin(), kernel.image.global.end());
  launch.params = kernel.image.params;
  launch.dynamicSharedBytes = 4 * kernel.image.dynamicSharedWords;
  for (const kernels::ParamSpec& p : spec.params) launch.paramIsPointer.push_back(p.isArray());
  for (const kernels::ArrayRange& a : kernel.image.arrays)
    if (spec.isMultiset(spec.params[a.param].name)) launch.unordered.push_back({a.firstWord, a.words});
  return launch;
}

Expected<gpu::GpuCase> buildCase(const kernels::KernelSpec& spec, host::Compiler compiler) {
  QGPU_TRY(kernel, compileKernel(spec, compiler));
  gpu::GpuCase c;
  c.kernel = spec.name;
  c.compiler = host::compilerName(compiler);
  c.ptxFile = caseFile(c);
  c.digest = gpu::ptxDigest(kernel.ptx);
  c.launch = gpuLaunch(spec, kernel);
  auto result = lowerAndInterpret(kernel);
  if (result.ok()) {
    c.expected = std::move(*result);
  } else {
    c.expectedError = result.error();
  }
  return c;
}

Expected<std::vector<uint32_t>> interpretCase(const gpu::GpuCase& c) {
  // The case's PTX and launch stand in for what compileKernel takes from the catalog; the entry is
  // the recorded one, looked up exactly by lowering.
  BuiltKernel kernel;
  kernel.ptx = c.launch.ptx;
  QGPU_TRY(module, ptx::parse(kernel.ptx, c.ptxFile.empty() ? caseFile(c) : c.ptxFile));
  kernel.module = std::move(module);
  kernel.entry = c.launch.entry;
  kernel.image.gridX = c.launch.gridX;
  kernel.image.blockX = c.launch.blockX;
  kernel.image.params = c.launch.params;
  if (c.launch.global.size() != kernel.image.global.size()) {
    return makeDiag(ErrorKind::Usage, "case image has " + std::to_string(c.launch.global.size()) +
                                          " words, the machine " +
                                          std::to_string(kernel.image.global.size()));
  }
  std::copy(c.launch.global.begin(), c.launch.global.end(), kernel.image.global.begin());
  return lowerAndInterpret(kernel);
}

Expected<gpu::Inputs> buildInputs(const std::vector<kernels::KernelSpec>& specs,
                                  const std::vector<host::Compiler>& compilers,
                                  const std::string& commit) {
  gpu::Inputs inputs;
  inputs.commit = commit;
  for (const kernels::KernelSpec& spec : specs) {
    for (host::Compiler compiler : compilers) {
      auto c = buildCase(spec, compiler);
      if (!c.ok()) {
        Diag d = c.error();
        d.message = spec.name + " (" + host::compilerName(compiler) + "): " + d.message;
        return d;
      }
      inputs.cases.push_back(std::move(*c));
    }
  }
  return inputs;
}

std::string gitCommit(const std::string& sourceDir) {
  auto slurp = [](const std::string& path) {  // the first line, or "" (a directory reads as "")
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  };
  auto under = [](const std::string& base, const std::string& path) {
    return !path.empty() && path[0] == '/' ? path : base + "/" + path;
  };
  // The git directory: .git itself, or the one a worktree's (or submodule's) .git file names;
  // a worktree keeps HEAD in it and the refs in the common directory its `commondir` names.
  std::string gitDir = sourceDir + "/.git";
  if (const std::string link = slurp(gitDir); link.rfind("gitdir: ", 0) == 0) {
    gitDir = under(sourceDir, link.substr(8));
  }
  const std::string common = slurp(gitDir + "/commondir");
  const std::string commonDir = common.empty() ? gitDir : under(gitDir, common);
  const std::string head = slurp(gitDir + "/HEAD");
  if (head.rfind("ref: ", 0) != 0) return head.size() == 40 ? head : "unknown";
  const std::string ref = head.substr(5);
  for (const std::string& dir : {gitDir, commonDir}) {
    if (std::string sha = slurp(dir + "/" + ref); sha.size() == 40) return sha;
  }
  std::ifstream packed(commonDir + "/packed-refs");
  std::string line;
  while (std::getline(packed, line)) {
    if (line.size() > 41 && line.compare(41, std::string::npos, ref) == 0) {
      return line.substr(0, 40);
    }
  }
  return "unknown";
}

}  // namespace qgpu::harness
