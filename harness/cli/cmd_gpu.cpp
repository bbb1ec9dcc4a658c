// qgpu/harness/cli/cmd_gpu.cpp — `qgpu gpu ...`: the real-GPU leg (docs/gpu.md).
//
//   qgpu gpu info                      the GPU the driver sees (exit 4 when none)
//   qgpu gpu export  [--out DIR]       catalog → reports/gpu/inputs/ (PTX, launch, interpreter
//                                      result) for the standalone qgpu-gpu-record
//   qgpu gpu export --random N [--seed S] [--policy TEXT] [--out DIR]
//                                      N random CUDA kernels (gen/cuda_gen.h, seeds S..S+N-1)
//                                      instead → reports/gpu/random/, each interpreter image
//                                      first checked against the generator's own expectation
//   qgpu gpu record  [--out FILE]      catalog → GPU (both compilers) → reports/gpu/recording.json,
//                                      each kernel compared with the interpreter
//   qgpu gpu compare [--recording FILE] [--inputs DIR | --fresh]
//                                      recorded GPU results vs today's interpreter; the host's PTX
//                                      is the exported inputs' (no tools needed) or, with
//                                      --fresh, compiled now
// `--kernel NAME` (repeatable) limits export/record/compare --fresh to some catalog kernels.
// Exit codes: command.h. NoDevice is 4 (inconclusive, printed as "skipped"), never 0.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "gen/cuda_gen.h"
#include "gpu/inputs.h"
#include "gpu/record.h"
#include "gpu/recording.h"
#include "gpu/runner.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "harness/gpu_cases.h"
#include "kernels/catalog.h"

namespace qgpu::cli {

namespace {

struct GpuOptions {
  std::string out;                   // export: folder; record: file
  std::string recording;             // compare: the recording to read
  std::string inputs;                // compare: the exported inputs to take the host's PTX from
  bool fresh = false;                // compare: compile the catalog now instead
  std::vector<std::string> kernels;  // --kernel filters
  uint64_t random = 0;               // export: this many random CUDA kernels instead of the catalog
  uint64_t seed = 1;                 // export --random: the first seed
  std::string policy;                // export --random: CudaPolicy fields ("name=value ...")
};

// NoDevice is inconclusive (reportError shows it as skipped, never as passed, exit 4).
int fail(const Diag& d) { return reportError(d); }

std::string root(const CommonOptions& common) {
  return common.sourceDir.empty() ? std::string(QGPU_SOURCE_DIR) : common.sourceDir;
}

Expected<std::vector<kernels::KernelSpec>> selectedKernels(const CommonOptions& common,
                                                           const GpuOptions& o) {
  QGPU_TRY(all, kernels::loadCatalog(root(common) + "/kernels/catalog"));
  if (o.kernels.empty()) return all;
  std::vector<kernels::KernelSpec> picked;
  for (const std::string& name : o.kernels) {
    bool found = false;
    for (const auto& s : all) {
      if (s.name == name) {
        picked.push_back(s);
        found = true;
      }
    }
    if (!found) return makeDiag(ErrorKind::Usage, "no catalog kernel named '" + echo(name) + "'");
  }
  return picked;
}

Expected<gpu::Inputs> catalogInputs(const CommonOptions& common, const GpuOptions& o) {
  QGPU_TRY(specs, selectedKernels(common, o));
  return harness::buildInputs(specs, {host::Compiler::Clang, host::Compiler::Nvcc},
                              harness::gitCommit(root(common)));
}

// The random CUDA generator's kernels for `export --random`: seeds seed .. seed + random - 1
// under the policy, each case's kernel file parsed as a catalog file (its expectations are the
// generator's), exported with both compilers like the catalog. A case whose interpreter image
// does not meet the generator's expectation fails the export, named: the GPU recording of these
// cases is then a check of the GPU against the generator and the interpreter at once.
Expected<gpu::Inputs> randomInputs(const CommonOptions& common, const GpuOptions& o) {
  QGPU_TRY(policy, gen::parseCudaPolicy(o.policy));
  std::vector<kernels::KernelSpec> specs;
  for (uint64_t i = 0; i < o.random; ++i) {
    QGPU_TRY(c, gen::generateCuda(policy, o.seed + i));
    QGPU_TRY(spec, kernels::parseKernelText(c.text, c.name + ".cu"));
    specs.push_back(std::move(spec));
  }
  QGPU_TRY(inputs, harness::buildInputs(specs, {host::Compiler::Clang, host::Compiler::Nvcc},
                                        harness::gitCommit(root(common))));
  for (const gpu::GpuCase& c : inputs.cases) {
    if (!c.expected) continue;  // lowering refused it (over a limit): the GPU still runs it
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const kernels::KernelSpec& k) {
      return k.name == c.kernel;
    });
    QGPU_TRY(image, kernels::layout(*spec));
    QGPU_TRY(differences, kernels::checkOutputs(*spec, image, *c.expected));
    if (!differences.empty())
      return makeDiag(ErrorKind::Internal,
                      c.kernel + " (" + c.compiler +
                          "): the interpreter differs from the generator: " + differences.front());
  }
  return inputs;
}

void printRows(const CommonOptions& common, const std::vector<gpu::RecordingRow>& rows,
               const Tally& tally, int stale, const std::vector<std::string>& notRecorded,
               const std::string& gpuName, const std::string& wrote = "") {
  if (common.json) {
    nlohmann::ordered_json o;
    o["gpu"] = gpuName;
    o["cases"] = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      o["cases"].push_back({{"kernel", r.kernel},
                            {"compiler", r.compiler},
                            {"verdict", verdictName(r.comparison.verdict)},
                            {"stale", r.comparison.stale},
                            {"detail", r.comparison.detail}});
    }
    o["notRecorded"] = notRecorded;
    o["match"] = tally[Verdict::Match];
    o["mismatch"] = tally[Verdict::Mismatch];
    o["inconclusive"] = tally[Verdict::Inconclusive];
    o["stale"] = stale;
    o["harnessError"] = tally[Verdict::HarnessError];
    if (!wrote.empty()) o["wrote"] = wrote;
    std::printf("%s\n", o.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  for (const auto& r : rows) {
    std::printf("%s\n", gpu::verdictLine(r.kernel, r.compiler, r.comparison).c_str());
  }
  for (const auto& n : notRecorded) std::printf("not recorded %s\n", n.c_str());
  std::printf("GPU (%s) vs interpreter: %s\n", gpuName.c_str(),
              gpu::summary(tally, stale).c_str());
}

int runInfo(const CommonOptions& common) {
  auto runner = gpu::Runner::open();
  if (!runner.ok()) return fail(runner.error());
  const gpu::DeviceInfo& d = runner->device();
  if (common.json) {
    std::printf("%s\n", dumpJson({{"gpu", d.name},
                                  {"computeCapability", std::to_string(d.ccMajor) + "." +
                                                            std::to_string(d.ccMinor)},
                                  {"driverApiVersion", d.driverVersion},
                                  {"library", d.libraryPath}})
                            .c_str());
    return kExitOk;
  }
  std::printf("%s, compute capability %d.%d, CUDA driver API %d, driver library %s\n",
              d.name.c_str(), d.ccMajor, d.ccMinor, d.driverVersion, d.libraryPath.c_str());
  return kExitOk;
}

int runExport(const CommonOptions& common, const GpuOptions& o) {
  auto inputs = o.random > 0 ? randomInputs(common, o) : catalogInputs(common, o);
  if (!inputs.ok()) return fail(inputs.error());
  const std::string defaultDir = o.random > 0 ? "/reports/gpu/random" : "/reports/gpu/inputs";
  std::string dir = o.out.empty() ? root(common) + defaultDir : o.out;
  auto wrote = gpu::writeInputs(*inputs, dir);
  if (!wrote.ok()) return fail(wrote.error());
  int refused = 0;
  for (const auto& c : inputs->cases) refused += c.expectedError.has_value();
  if (common.json) {
    std::printf("%s\n", dumpJson({{"exported", inputs->cases.size()},
                                  {"withoutInterpreterResult", refused},
                                  {"commit", inputs->commit},
                                  {"dir", dir}})
                            .c_str());
    return kExitOk;
  }
  std::printf("exported %zu cases (%d without an interpreter result) at commit %s to %s\n",
              inputs->cases.size(), refused, inputs->commit.c_str(), dir.c_str());
  return kExitOk;
}

int runRecord(const CommonOptions& common, const GpuOptions& o) {
  auto runner = gpu::Runner::open();  // first: no device means nothing to compile for
  if (!runner.ok()) return fail(runner.error());
  auto inputs = catalogInputs(common, o);
  if (!inputs.ok()) return fail(inputs.error());
  gpu::Recording rec;
  rec.provenance = gpu::collectProvenance(runner->device(), inputs->commit, "qgpu gpu record");
  std::vector<gpu::RecordingRow> rows;
  Tally tally;
  int stale = 0;
  for (const auto& c : inputs->cases) {
    gpu::RecordedCase rc = gpu::recordCase(*runner, c.kernel, c.compiler, c.launch);
    gpu::CaseComparison cmp = gpu::compareCase(rc, c.digest, c.expectation(), c.launch.unordered);
    tally.add(cmp.verdict);
    stale += cmp.stale;
    rows.push_back({c.kernel, c.compiler, cmp});
    rec.cases.push_back(std::move(rc));
  }
  std::string path = o.out.empty() ? root(common) + "/reports/gpu/recording.json" : o.out;
  auto wrote = gpu::writeRecording(rec, path);
  if (!wrote.ok()) return fail(wrote.error());
  printRows(common, rows, tally, stale, {}, runner->device().name, path);
  if (!common.json) std::printf("wrote %s\n", path.c_str());
  return exitCode(tally);
}

int runCompare(const CommonOptions& common, const GpuOptions& o) {
  std::string path = o.recording.empty() ? root(common) + "/reports/gpu/recording.json" : o.recording;
  auto rec = gpu::readRecording(path);
  if (!rec.ok()) return fail(rec.error());
  Expected<gpu::Inputs> current = o.fresh ? catalogInputs(common, o)
                                     : gpu::readInputs(o.inputs.empty()
                                                           ? root(common) + "/reports/gpu/inputs"
                                                           : o.inputs);
  if (!current.ok()) return fail(current.error());
  gpu::RecordingReport report = gpu::compareRecording(*rec, *current, harness::interpretCase);
  printRows(common, report.rows, report.tally, report.stale, report.notRecorded,
            rec->provenance.gpu);
  return exitCode(report.tally);
}

}  // namespace

Command addGpuCommand(CLI::App& root, const CommonOptions& common) {
  auto opts = std::make_shared<GpuOptions>();
  CLI::App* app = root.add_subcommand("gpu", "The real-GPU leg: run, record and compare (docs/gpu.md)");
  app->require_subcommand(1);
  CLI::App* info = app->add_subcommand("info", "Show the GPU the CUDA driver sees");
  CLI::App* exp = app->add_subcommand("export", "Write catalog PTX, launches and interpreter "
                                                "results for qgpu-gpu-record");
  exp->add_option("--out", opts->out, "Folder (default: reports/gpu/inputs)");
  auto* kernelOpt = exp->add_option("--kernel", opts->kernels, "Only these catalog kernels");
  auto* randomOpt =
      exp->add_option("--random", opts->random,
                      "This many random CUDA kernels instead of the catalog (default folder "
                      "reports/gpu/random)")
          ->excludes(kernelOpt);
  exp->add_option("--seed", opts->seed, "With --random: the first seed (then S+1, ...)")
      ->needs(randomOpt);
  exp->add_option("--policy", opts->policy,
                  "With --random: policy fields \"name=value ...\" (as qgpu fuzz --gen cuda)")
      ->needs(randomOpt);
  CLI::App* rec = app->add_subcommand("record", "Run the catalog on the GPU and write the recording");
  rec->add_option("--out", opts->out, "Recording file (default: reports/gpu/recording.json)");
  rec->add_option("--kernel", opts->kernels, "Only these catalog kernels");
  CLI::App* cmp = app->add_subcommand("compare", "Compare a GPU recording with the interpreter");
  cmp->add_option("--recording", opts->recording, "Default: reports/gpu/recording.json");
  auto* inputsOpt = cmp->add_option("--inputs", opts->inputs, "Default: reports/gpu/inputs");
  cmp->add_flag("--fresh", opts->fresh, "Compile the catalog now instead of reading --inputs")
      ->excludes(inputsOpt);
  cmp->add_option("--kernel", opts->kernels, "With --fresh: only these catalog kernels");

  Command command;
  command.app = app;
  command.run = [&common, opts, info, exp, rec, cmp]() -> int {
    if (info->parsed()) return runInfo(common);
    if (exp->parsed()) return runExport(common, *opts);
    if (rec->parsed()) return runRecord(common, *opts);
    if (cmp->parsed()) return runCompare(common, *opts);
    return kExitUsage;
  };
  return command;
}

}  // namespace qgpu::cli
