// qgpu/gpu/pipeline.cpp — catalog kernels to GPU cases (see pipeline.h).
#include "gpu/pipeline.h"

#include <fstream>
#include <sstream>

#include "gpu/recording.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::gpu {

namespace {

Expected<std::string> entryName(const ptx::Module& module, const std::string& kernel) {
  std::vector<std::string> entries;
  for (const ptx::Function& f : module.functions) {
    if (f.isEntry) entries.push_back(f.name);
  }
  if (entries.size() == 1) return entries[0];
  for (const std::string& e : entries) {
    if (e == kernel) return e;
  }
  return makeDiag(ErrorKind::PtxInvalid, "module has " + std::to_string(entries.size()) +
                                             " entries and none is named '" + kernel + "'");
}

std::string caseFile(const GpuCase& c) { return c.kernel + "." + c.compiler + ".ptx"; }

Expected<std::vector<uint32_t>> interpretModule(const ptx::Module& module, const GpuCase& c) {
  lower::LowerOptions opts;
  opts.entry = c.launch.entry;
  opts.params = c.launch.params;
  QGPU_TRY(program, lower::lower(module, opts));
  machine::Launch launch;
  launch.gridX = c.launch.gridX;
  launch.blockX = c.launch.blockX;
  if (c.launch.global.size() != launch.global.size()) {
    return makeDiag(ErrorKind::Usage, "case image has " + std::to_string(c.launch.global.size()) +
                                          " words, the machine " +
                                          std::to_string(launch.global.size()));
  }
  std::copy(c.launch.global.begin(), c.launch.global.end(), launch.global.begin());
  oracle::RunOptions ro;
  ro.recordTrace = false;
  QGPU_TRY(result, oracle::run(program, launch, ro));
  if (result.status != oracle::RunStatus::Finished) return result.fault;
  return std::vector<uint32_t>(result.global.begin(), result.global.end());
}

}  // namespace

Expected<GpuCase> buildCase(const kernels::KernelSpec& spec, host::Compiler compiler) {
  QGPU_TRY(image, kernels::layout(spec));
  host::CompileOptions co;
  co.fileName = spec.name + ".cu";
  QGPU_TRY(ptxText, host::compileToPtx(spec.source, compiler, co));
  GpuCase c;
  c.kernel = spec.name;
  c.compiler = host::compilerName(compiler);
  c.ptxFile = caseFile(c);
  c.digest = ptxDigest(ptxText);
  QGPU_TRY(module, ptx::parse(ptxText, c.ptxFile));
  QGPU_TRY(entry, entryName(module, spec.name));
  c.launch.ptx = std::move(ptxText);
  c.launch.entry = entry;
  c.launch.gridX = image.gridX;
  c.launch.blockX = image.blockX;
  c.launch.global.assign(image.global.begin(), image.global.end());
  c.launch.params = image.params;
  for (const kernels::ParamSpec& p : spec.params) c.launch.paramIsPointer.push_back(p.isArray());
  for (const kernels::ArrayRange& a : image.arrays) {
    if (spec.isMultiset(spec.params[a.param].name)) c.launch.unordered.push_back({a.firstWord, a.words});
  }
  auto result = interpretModule(module, c);
  if (result.ok()) {
    c.expected = std::move(*result);
  } else {
    c.expectedError = result.error();
  }
  return c;
}

Expected<std::vector<uint32_t>> interpretCase(const GpuCase& c) {
  QGPU_TRY(module, ptx::parse(c.launch.ptx, c.ptxFile.empty() ? caseFile(c) : c.ptxFile));
  return interpretModule(module, c);
}

Expected<Inputs> buildInputs(const std::vector<kernels::KernelSpec>& specs,
                             const std::vector<host::Compiler>& compilers,
                             const std::string& commit) {
  Inputs inputs;
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
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  };
  std::string head = slurp(sourceDir + "/.git/HEAD");
  if (head.rfind("ref: ", 0) != 0) return head.size() == 40 ? head : "unknown";
  std::string ref = head.substr(5);
  std::string sha = slurp(sourceDir + "/.git/" + ref);
  if (sha.size() == 40) return sha;
  std::ifstream packed(sourceDir + "/.git/packed-refs");
  std::string line;
  while (std::getline(packed, line)) {
    if (line.size() > 41 && line.compare(41, std::string::npos, ref) == 0) return line.substr(0, 40);
  }
  return "unknown";
}

}  // namespace qgpu::gpu
