// qgpu/harness/pipeline.cpp — compile → parse → lower → interpret, with verdicts.
#include "harness/pipeline.h"

#include <algorithm>
#include <filesystem>

#include "common/digest.h"
#include "common/text.h"
#include "host/ptx/parser.h"

namespace qgpu::harness {

namespace {

std::string describeFault(const oracle::RunResult& run) {
  switch (run.status) {
    case oracle::RunStatus::Finished: return "";
    case oracle::RunStatus::Fault: return "machine fault: " + run.fault.message;
    case oracle::RunStatus::StepLimit: return run.fault.message;
  }
  return "";
}

}  // namespace

Expected<BuiltKernel> compileKernel(const kernels::KernelSpec& spec, host::Compiler compiler) {
  BuiltKernel built;
  built.compiler = compiler;
  QGPU_TRY(image, kernels::layout(spec));
  built.image = std::move(image);

  host::CompileOptions options;
  options.fileName = spec.path.empty() ? spec.name + ".cu" : spec.path;
  QGPU_TRY(ptx, host::compileToPtx(spec.source, compiler, options));
  built.ptx = std::move(ptx);
  built.ptxDigest = digestString(fnv1a64(built.ptx));

  std::string ptxName = spec.name + "." + host::compilerName(compiler) + ".ptx";
  QGPU_TRY(module, ptx::parse(built.ptx, ptxName));
  built.module = std::move(module);

  QGPU_TRY(entry, ptx::findEntry(built.module, spec.name));
  built.entry = entry->name;
  return built;
}

Expected<machine::Program> expandProgram(machine::Program program, const BuildOptions& build,
                                         const std::vector<std::vector<SourceLoc>>& opLocs,
                                         lower::ExpandDivisionStats* division, lower::ExpandMultiplyStats* multiply) {
  std::vector<std::vector<SourceLoc>> locs = opLocs;  // follows the program through the passes
  if (build.expandDivision) {
    const auto given = locs;
    lower::ExpandDivisionOptions options;
    options.opLocs = &given;
    options.locsOut = &locs;
    QGPU_TRY(expanded, lower::expandDivision(program, options, division));
    program = std::move(expanded);
  }
  if (build.expandMultiply) {
    const auto given = locs;
    lower::ExpandMultiplyOptions options;
    options.highOnly = build.multiplyHighOnly;
    options.opLocs = &given;
    options.locsOut = &locs;
    QGPU_TRY(expanded, lower::expandMultiply(program, options, multiply));
    program = std::move(expanded);
  }
  return program;
}

Status lowerKernel(BuiltKernel& built, const BuildOptions& build) {
  lower::LowerOptions lowerOptions;
  lowerOptions.entry = built.entry;
  lowerOptions.params = built.image.params;
  lowerOptions.dynamicSharedWords = built.image.dynamicSharedWords;
  QGPU_TRY(lowered, lower::lower(built.module, lowerOptions, &built.stats));
  machine::Program program = std::move(lowered);
  QGPU_TRY(expanded, expandProgram(std::move(program), build, built.stats.opLocs, &built.division, &built.multiply));
  program = std::move(expanded);
  // lower() verified the program alone; the launch decides whether its spills fit (OverLimit).
  QGPU_CHECK(machine::verify(program, built.image.toMachineLaunch()));
  built.program = std::move(program);
  return Ok{};
}

Expected<BuiltKernel> buildKernel(const kernels::KernelSpec& spec, host::Compiler compiler,
                                  const BuildOptions& build) {
  QGPU_TRY(built, compileKernel(spec, compiler));
  QGPU_CHECK(lowerKernel(built, build));
  return built;
}

InterpCase runInterpCase(const kernels::KernelSpec& spec, host::Compiler compiler,
                         const oracle::RunOptions& options, const BuildOptions& build) {
  InterpCase c;
  CaseResult& r = c.result;
  r.kernel = spec.name;
  r.compiler = host::compilerName(compiler);
  r.backend = Backend::Interp;

  auto fail = [&r](const Diag& d) {
    r.verdict = caseVerdict(d);
    r.error = d.kind;
    r.detail = d.str();
  };
  c.kernel = buildKernel(spec, compiler, build);
  // common/outcome.h: a missing tool or a construct (or launch) the machine cannot run is
  // inconclusive; anything else wrong with a catalog kernel is a harness error.
  if (!c.kernel.ok()) {
    fail(c.kernel.error());
    return c;
  }
  const BuiltKernel& kernel = *c.kernel;
  r.ptxDigest = kernel.ptxDigest;
  r.machineBlocks = static_cast<int>(kernel.program.blocks.size());
  r.spillSlots = kernel.stats.spillSlots;

  machine::Launch launch = kernel.image.toMachineLaunch();
  auto first = oracle::run(kernel.program, launch, options);
  auto second = oracle::run(kernel.program, launch, options);
  // buildKernel verified the program with this launch: a refusal here is a qgpu bug.
  if (!first.ok() || !second.ok()) {
    Diag d = first.ok() ? second.error() : first.error();
    fail(makeDiag(ErrorKind::Internal, "a built program was refused: " + d.str()));
    return c;
  }
  const oracle::RunResult& run = first.value();
  const oracle::RunResult& again = second.value();
  r.traceDigest = digestString(trace::digest(run.trace));
  r.traceTokens = run.trace.size();
  r.steps = run.blockExecs;
  r.laneInstrs = run.laneInstrs;
  if (again.trace != run.trace || again.global != run.global || again.status != run.status) {
    c.run = makeDiag(ErrorKind::Internal,
                     "interpreter self-check failed: two runs of the same program differ");
    fail(c.run.error());
    return c;
  }
  c.run = std::move(first).value();
  if (c.run->status != oracle::RunStatus::Finished) {
    // A fault is a mismatch (the reference finishes); a step limit is a timeout: inconclusive.
    r.verdict = caseVerdict(c.run->fault);
    r.error = c.run->fault.kind;
    r.detail = describeFault(*c.run);
    return c;
  }
  auto differences = kernels::checkOutputs(spec, kernel.image, c.run->global);
  if (!differences.ok()) {
    fail(differences.error());
    return c;
  }
  for (std::string& d : writesOutsideArrays(kernel.image, kernel.image.global, c.run->global))
    differences->push_back(std::move(d));
  if (differences->empty()) {
    r.verdict = Verdict::Match;
  } else {
    r.verdict = Verdict::Mismatch;
    r.detail = differences->front();
    if (differences->size() > 1)
      r.detail += " (and " + std::to_string(differences->size() - 1) + " more)";
  }
  return c;
}

std::vector<std::string> writesOutsideArrays(const kernels::LaunchImage& image,
                                             std::span<const uint32_t> initial,
                                             std::span<const uint32_t> final) {
  std::vector<bool> inArray(std::max(initial.size(), final.size()), false);
  for (const kernels::ArrayRange& a : image.arrays)
    for (uint32_t k = a.firstWord; k < a.firstWord + a.words && k < inArray.size(); ++k)
      inArray[k] = true;
  std::vector<std::string> out;
  for (size_t w = 0; w < inArray.size(); ++w) {
    if (inArray[w]) continue;
    bool have = w < initial.size() && w < final.size();
    if (have && initial[w] == final[w]) continue;
    out.push_back("word " + std::to_string(w) + " (no parameter's) changed: " +
                  (w < initial.size() ? hexWord(initial[w]) : "-") + " -> " +
                  (w < final.size() ? hexWord(final[w]) : "-"));
  }
  return out;
}

Expected<kernels::KernelSpec> resolveKernel(const std::string& nameOrPath,
                                            const std::string& catalogDir) {
  std::error_code ec;
  if (nameOrPath.find('/') != std::string::npos || nameOrPath.ends_with(".cu"))
    return kernels::parseKernelFile(nameOrPath);
  std::string path = catalogDir + "/" + nameOrPath + ".cu";
  if (!std::filesystem::exists(path, ec))
    return makeDiag(ErrorKind::Usage, "no catalog kernel named '" + echo(nameOrPath) + "' (looked for " +
                                          echo(path, 200) +
                                          "); `qgpu check --list` lists them");
  return kernels::parseKernelFile(path);
}

const char* backendName(Backend b) {
  switch (b) {
    case Backend::Interp: return "interp";
    case Backend::Gpu: return "gpu";
    case Backend::ModelF32: return "model-fp32";
    case Backend::ModelBf16: return "model-bf16";
  }
  return "?";
}

}  // namespace qgpu::harness
