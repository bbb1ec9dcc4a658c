// qgpu/harness/cli/cmd_run.cpp — `qgpu run`: runs one kernel (catalog name or .cu file) on one
// backend and prints its final arrays, the comparison with the expected outputs, and optionally
// the trace. With --json it prints the run report of `check` (schema qgpu-check-report version 2,
// docs/reports.md) of its one or two cases, plus `arrays` (and `trace` with --trace): a one-kernel
// run whose plan's catalog is that kernel alone, readable by every reader of run reports.
#include <chrono>
#include <array>
#include <iostream>
#include <optional>

#include "common/digest.h"
#include "common/text.h"
#include "harness/check.h"
#include "harness/cli/command.h"
#include "harness/cli/expand_flags.h"
#include "harness/cli/steps.h"
#include "harness/cli/util.h"
#include "harness/report/json_report.h"
#include "harness/report/provenance.h"
#ifdef QGPU_HAVE_MODEL
#include "circuit/leg.h"
#include "harness/model_leg.h"
#endif

namespace qgpu::cli {

namespace {

struct RunCmdOptions {
  std::string kernel;
  std::string compiler = "clang";
  std::string backend = "interp";
  bool trace = false;
  ExpandFlags expand;  // --expand-division, --expand-multiply, --expand-mulhi
  uint64_t maxSteps = trace::kModelStepLimit;  // the limit a compiled model writes LIMIT at
  // --backend model (harness/model_leg.h)
  std::string dtype = "fp32";
  std::string checkpoint;  // empty: build the model into a temporary directory
  size_t tokenBudget = 20000;
  bool check = false;
};

void printArrays(const kernels::KernelSpec& spec, const kernels::LaunchImage& image,
                 const std::array<uint32_t, machine::kGlobalWords>& global) {
  for (const kernels::ArrayRange& range : image.arrays) {
    const kernels::ParamSpec& p = spec.params[range.param];
    std::vector<uint32_t> words(global.begin() + range.firstWord,
                                global.begin() + range.firstWord + range.words);
    std::cout << p.name << " (" << kernels::paramKindName(p.kind) << ") = "
              << kernels::formatValues(words, p.type) << "\n";
  }
}

int runRun(const RunCmdOptions& o, const CommonOptions& common) {
  auto compilers = parseCompilers(o.compiler);
  if (!compilers.ok()) return reportError(compilers.error());
  if (compilers->size() != 1)
    return reportError(makeDiag(ErrorKind::Usage, "run takes one compiler (clang or nvcc)"));
  if (o.backend != "interp" && o.backend != "gpu" && o.backend != "model")
    return reportError(
        makeDiag(ErrorKind::Usage, "unknown backend '" + echo(o.backend) + "' (interp, gpu or model)"));
#ifndef QGPU_HAVE_MODEL
  if (o.backend == "model")
    return reportError(makeDiag(ErrorKind::ToolMissing,
                                "the model backend needs a LibTorch build (QGPU_WITH_TORCH)"));
#endif
  if (o.backend != "model" && (o.check || !o.checkpoint.empty()))
    return reportError(makeDiag(ErrorKind::Usage, "--check and --checkpoint are --backend model's"));
  auto spec = harness::resolveKernel(o.kernel, catalogDir(common));
  if (!spec.ok()) return reportError(spec.error());

  auto started = std::chrono::steady_clock::now();
  std::string startedAt = report::utcNow();
  oracle::RunOptions runOptions;
  runOptions.maxSteps = o.maxSteps;
  // The interpreter case always runs: it is the reference the GPU is compared with.
  // The model runs the circuit target's program (harness::circuitBuildOptions): division and mulhi
  // expanded (the circuit has no divider, and its multiplier gives the low half), and the
  // interpreter beside it runs the same.
  ExpandFlags expand = o.expand;
  if (o.backend == "model") expand.division = expand.mulhi = true;
  harness::BuildOptions build;
  expand.applyTo(build);
  harness::InterpCase interp = harness::runInterpCase(*spec, compilers->front(), runOptions, build);
  // A kernel the user gave that does not build is bad input, reported with its location.
  if (!interp.built()) return reportError(interp.kernel.error());
  harness::CheckReport report;
  // The evidence `check` records of a built case (the manifest's digests and the launch).
  interp.result.programDigest = harness::programDigest(interp.kernel->program);
  interp.result.inputDigest =
      harness::inputDigest(interp.kernel->image.global, interp.kernel->image.params);
  interp.result.gridX = interp.kernel->image.gridX;
  interp.result.blockX = interp.kernel->image.blockX;
  report.cases.push_back(interp.result);
  if (o.backend == "gpu") {
    harness::GpuSession gpu;
    report.gpuDevice = gpu.description();
    harness::CaseResult g = gpu.compare(*spec, interp);
    g.programDigest = interp.result.programDigest;
    g.inputDigest = interp.result.inputDigest;
    g.gridX = interp.result.gridX;
    g.blockX = interp.result.blockX;
    report.cases.push_back(std::move(g));
  }
  // The model's final memory, shown instead of the interpreter's when it ran.
  std::optional<std::array<uint32_t, machine::kGlobalWords>> modelGlobal;
#ifdef QGPU_HAVE_MODEL
  if (o.backend == "model") {
    harness::ModelLegOptions mo;
    mo.dtype = o.dtype == "bf16" ? model::ComputeDtype::BF16 : model::ComputeDtype::F32;
    mo.checkpoint = o.checkpoint;
    mo.tokenBudget = o.tokenBudget;
    mo.check = o.check;
    harness::CaseResult m;
    if (Status executes = circuit::pipelineExecutes(interp.kernel->program); !executes.ok()) {
      // Refused before any model is built: the program is beyond the compiled circuit.
      m = harness::refusedModelCase(spec->name, compilers->front(), harness::modelBackend(mo.dtype), executes.error());
    } else {
      auto session = harness::ModelSession::open(mo);
      if (!session.ok()) return reportError(session.error());
      std::cerr << "model: " << (*session)->description() << "\n";
      std::array<uint32_t, machine::kGlobalWords> final{};
      m = (*session)->compare(*spec, *interp.kernel, &final);
      if (!(*session)->lastTiming().empty()) std::cerr << "model: " << (*session)->lastTiming() << "\n";
      if (m.verdict == Verdict::Match || m.verdict == Verdict::Mismatch) modelGlobal = final;
    }
    m.programDigest = interp.result.programDigest;
    m.inputDigest = interp.result.inputDigest;
    m.gridX = interp.result.gridX;
    m.blockX = interp.result.blockX;
    report.cases.push_back(std::move(m));
  }
#endif
  for (const harness::CaseResult& c : report.cases)
    report.tallies[{c.backend, c.compiler}].add(c.verdict);
  const harness::CaseResult& shown = report.cases.back();

  if (common.json) {
    report::Plan plan;
    plan.catalogDigest = report::catalogDigest({*spec});
    plan.catalogKernels = 1;
    plan.kernels = {spec->name};
    plan.compilers = {o.compiler};
    plan.gpu = o.backend == "gpu";
    plan.maxSteps = o.maxSteps;
    report::RunReport run = report::makeRunReport(plan, report::ShardSpec{}, {0}, report);
    run.startedAt = startedAt;
    run.finishedAt = report::utcNow();
    run.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::string torch;
#ifdef QGPU_TORCH_VERSION
    torch = QGPU_TORCH_VERSION;
#endif
    run.provenance = report::collectProvenance(common.sourceDir, torch);
    nlohmann::json out = report::toJson(run);
    addExpansionJson(out, expand, interp.kernel->division, interp.kernel->multiply);
    // No run (the interpreter's self-check failed): no arrays to show, only the verdict.
    if (interp.run.ok()) {
      nlohmann::json arrays = nlohmann::json::object();
      for (const kernels::ArrayRange& range : interp.kernel->image.arrays)
        arrays[spec->params[range.param].name] = std::vector<uint32_t>(
            interp.run->global.begin() + range.firstWord,
            interp.run->global.begin() + range.firstWord + range.words);
      out["arrays"] = arrays;
      if (o.trace) {
        std::vector<std::string> names;
        for (trace::Token t : interp.run->trace) names.push_back(trace::tokenName(t));
        out["trace"] = names;
      }
    }
    std::cout << dumpJson(out) << "\n";
  } else {
    for (const std::string& line : expansionLines(expand, interp.kernel->division, interp.kernel->multiply))
      std::cout << line << "\n";
    if (modelGlobal) {
      printArrays(*spec, interp.kernel->image, *modelGlobal);
    } else if (interp.run.ok() && o.backend != "model") {  // a model that did not run shows none
      printArrays(*spec, interp.kernel->image, interp.run->global);
      if (o.trace) std::cout << trace::pretty(interp.run->trace);
      std::cout << "trace: " << interp.run->trace.size() << " tokens, " << interp.run->blockExecs
                << " steps, " << interp.result.traceDigest << "\n";
    }
    std::cout << verdictName(shown.verdict) << " [" << o.compiler << ", "
              << harness::backendName(shown.backend) << "]"
              << (shown.detail.empty() ? "" : ": " + shown.detail) << "\n";
  }
  return exitCode(shown.verdict);
}

}  // namespace

Command addRunCommand(CLI::App& root, const CommonOptions& common) {
  static RunCmdOptions o;
  CLI::App* app = root.add_subcommand("run", "Run one kernel on a backend and print its arrays");
  app->add_option("kernel", o.kernel, "Catalog kernel name or .cu file")->required();
  app->add_option("--compiler", o.compiler, "clang or nvcc")->capture_default_str();
  app->add_option("--backend,-b", o.backend, "interp, gpu or model (the compiled Qwen3.5 model)")
      ->capture_default_str();
  app->add_option("--dtype", o.dtype, "model backend: fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app->add_option("--checkpoint", o.checkpoint,
                  "model backend: a checkpoint `qgpu circuit build` wrote (default: build one)");
  app->add_option("--token-budget", o.tokenBudget, "model backend: most tokens to generate")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app->add_flag("--check", o.check,
                "model backend: compare with the interpreter token for token (first difference)");
  app->add_flag("--trace", o.trace, "Print the token trace with its decoded meaning");
  addExpandFlags(app, o.expand);
  addMaxStepsOption(app, o.maxSteps);
  return {app, [&common] { return runRun(o, common); }};
}

}  // namespace qgpu::cli
