// qgpu/harness/cli/cmd_check.cpp — `qgpu check`: the main job. Runs the kernel catalog through
// every compiler and every backend available here and prints one line per case that did not
// match, then the counts. `--report FILE` writes the full JSON report (reports/ for nightly CI),
// `--junit`, `--html`, `--manifest` the other reports (docs/reports.md); `--shard i/n` (or
// GoogleTest's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX) runs one shard of the plan, balanced by a
// previous report's durations with `--balance REPORT`.
#include <sys/resource.h>

#include <chrono>
#include <iostream>
#include <set>

#include <filesystem>

#include "common/text.h"
#include "harness/audit.h"
#include "harness/cli/progress.h"
#include "harness/cli/report_outputs.h"
#include "common/file.h"
#include "harness/report/manifest.h"
#include "harness/report/plan.h"
#include "harness/report/provenance.h"
#include "harness/report/shard.h"

#include "harness/check.h"
#include "harness/cli/command.h"
#include "harness/cli/steps.h"
#include "harness/cli/util.h"
#ifdef QGPU_HAVE_MODEL
#include "harness/model_leg.h"
#endif

namespace qgpu::cli {

namespace {

constexpr int kMaxJobs = 256;  // --jobs: worker threads

// ModelLegOptions::tokenBudget's default, here too where no LibTorch is built
// (harness/model_leg.h).
constexpr size_t kDefaultModelTokenBudget = 20000;

struct CheckCmdOptions {
  std::string compiler = "both";
  std::vector<std::string> kernels;  // only these (names)
  std::vector<std::string> tags;     // only kernels with one of these tags
  bool noGpu = false;
  bool list = false;
  bool verbose = false;
  ReportOutputs outputs;
  std::string out;          // --out DIR: report.json, manifest.json, traces/ (a recorded run)
  std::string shard;        // --shard i/n
  std::string balance;      // --balance REPORT
  int jobs = 2;
  uint64_t maxSteps = trace::kModelStepLimit;  // the limit a compiled model writes LIMIT at
  std::vector<std::string> models;  // --model: the model legs, "fp32" and/or "bf16"
  std::string modelCheckpoint;      // --model-checkpoint: a `qgpu circuit build` directory
  size_t modelTokenBudget = kDefaultModelTokenBudget;  // --model-token-budget
};

// --model's legs in the order given, each once; a Usage error names an unknown one.
Expected<std::vector<harness::Backend>> parseModelLegs(const std::vector<std::string>& names) {
  std::vector<harness::Backend> legs;
  for (const std::string& n : names) {
    if (n != "fp32" && n != "bf16")
      return makeDiag(ErrorKind::Usage, "--model '" + echo(n) + "': the model legs are fp32 and bf16");
    harness::Backend leg = n == "fp32" ? harness::Backend::ModelF32 : harness::Backend::ModelBf16;
    if (std::find(legs.begin(), legs.end(), leg) == legs.end()) legs.push_back(leg);
  }
  return legs;
}

// The process's CPU seconds so far: its threads and its waited-for children (the compilers).
double processCpuSeconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (getrusage(who, &u) != 0) continue;
    total += double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return total;
}

// The shard this run is: --shard, else GoogleTest's variables (then the status file is touched),
// else the whole plan.
Expected<report::ShardSpec> chooseShard(const std::string& flag) {
  if (!flag.empty()) return report::parseShard(flag);
  QGPU_TRY(env, report::shardFromEnvironment());
  if (!env) return report::ShardSpec{};
  QGPU_CHECK(report::touchShardStatusFile());
  return *env;
}

// The plan kernels (indices) of `shard`: round robin, or balanced by the durations of the run
// report at `balancePath` (shard.h).
Expected<std::vector<size_t>> jobsOfShard(const report::Plan& plan, report::ShardSpec shard,
                                          const std::string& balancePath) {
  std::optional<std::map<std::string, double>> durations;
  if (!balancePath.empty()) {
    QGPU_TRY(previous, report::readReport(balancePath));
    durations = report::durationsFromReport(previous);
  }
  return report::shardJobs(
      report::assignShards(plan, shard.total, durations ? &*durations : nullptr), shard.index);
}

bool selected(const kernels::KernelSpec& spec, const CheckCmdOptions& o) {
  if (!o.kernels.empty() &&
      std::find(o.kernels.begin(), o.kernels.end(), spec.name) == o.kernels.end())
    return false;
  if (o.tags.empty()) return true;
  for (const std::string& tag : o.tags)
    if (spec.hasTag(tag)) return true;
  return false;
}

// --out DIR fills in the files of a recorded run (those not given explicitly) and makes the
// directories --out and --traces need.
Status prepareOutputs(CheckCmdOptions& o) {
  namespace fs = std::filesystem;
  if (!o.out.empty()) {
    fs::path dir(o.out);
    if (o.outputs.report.empty()) o.outputs.report = (dir / "report.json").string();
    if (o.outputs.manifest.empty()) o.outputs.manifest = (dir / "manifest.json").string();
    if (o.outputs.traces.empty()) o.outputs.traces = (dir / "traces").string();
  }
  for (const std::string& d : {o.out, o.outputs.traces}) {
    if (d.empty()) continue;
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec || !fs::is_directory(d, ec))
      return makeDiag(ErrorKind::Io, "cannot make the directory: " + ec.message(), SourceLoc{d, 0, 0});
  }
  return Ok{};
}

int runCheckCommand(CheckCmdOptions& o, const CommonOptions& common) {
  auto started = std::chrono::steady_clock::now();
  if (Status prepared = prepareOutputs(o); !prepared.ok()) return reportError(prepared.error());
  std::string startedAt = report::utcNow();
  auto catalog = kernels::loadCatalog(catalogDir(common));
  if (!catalog.ok()) return reportError(catalog.error());
  report::Plan plan;
  plan.catalogDigest = report::catalogDigest(*catalog);
  plan.catalogKernels = static_cast<uint32_t>(catalog->size());
  // An unknown tag would select nothing and pass for "inconclusive": it is a usage error.
  std::set<std::string> known;
  for (const kernels::KernelSpec& spec : *catalog)
    for (const std::string& tag : spec.tags) known.insert(tag);
  for (const std::string& tag : o.tags) {
    if (known.count(tag)) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return reportError(makeDiag(ErrorKind::Usage,
                                "unknown tag '" + echo(tag) + "'; the catalog's tags: " + list));
  }
  if (o.jobs < 1 || o.jobs > kMaxJobs)
    return reportError(makeDiag(ErrorKind::Usage, "--jobs " + std::to_string(o.jobs) +
                                                      " is outside 1.." + std::to_string(kMaxJobs)));
  std::vector<kernels::KernelSpec> chosen;
  for (kernels::KernelSpec& spec : *catalog)
    if (selected(spec, o)) chosen.push_back(std::move(spec));
  for (const std::string& name : o.kernels)
    if (std::none_of(chosen.begin(), chosen.end(), [&](auto& s) { return s.name == name; }))
      return reportError(makeDiag(ErrorKind::Usage, "no catalog kernel named '" + echo(name) + "'"));
  if (o.list) {
    if (common.json) {
      nlohmann::json list = nlohmann::json::array();
      for (const kernels::KernelSpec& spec : chosen)
        list.push_back({{"name", spec.name}, {"summary", spec.summary}, {"tags", spec.tags}});
      std::cout << dumpJson({{"kernels", list}}) << "\n";
      return kExitOk;
    }
    for (const kernels::KernelSpec& spec : chosen)
      std::printf("%-24s %s\n", spec.name.c_str(), spec.summary.c_str());
    return kExitOk;
  }
  auto compilers = parseCompilers(o.compiler);
  if (!compilers.ok()) return reportError(compilers.error());

  auto modelLegs = parseModelLegs(o.models);
  if (!modelLegs.ok()) return reportError(modelLegs.error());
  if (modelLegs->empty() && !o.modelCheckpoint.empty())
    return reportError(makeDiag(ErrorKind::Usage, "--model-checkpoint needs --model"));
  if (modelLegs->empty() && o.modelTokenBudget != kDefaultModelTokenBudget)
    return reportError(makeDiag(ErrorKind::Usage, "--model-token-budget needs --model"));
#ifndef QGPU_HAVE_MODEL
  if (!modelLegs->empty())
    return reportError(makeDiag(ErrorKind::Usage, "--model needs a LibTorch build (QGPU_WITH_TORCH)"));
#endif

  auto shard = chooseShard(o.shard);
  if (!shard.ok()) return reportError(shard.error());
  for (const kernels::KernelSpec& spec : chosen) plan.kernels.push_back(spec.name);
  for (host::Compiler c : *compilers) plan.compilers.push_back(host::compilerName(c));
  plan.gpu = !o.noGpu;
  for (harness::Backend leg : *modelLegs) plan.models.push_back(leg == harness::Backend::ModelF32 ? "fp32" : "bf16");
  plan.maxSteps = o.maxSteps;
  auto shardJobs = jobsOfShard(plan, *shard, o.balance);
  if (!shardJobs.ok()) return reportError(shardJobs.error());
  const std::vector<size_t>& jobs = *shardJobs;
  std::vector<kernels::KernelSpec> mine;
  for (size_t job : jobs) mine.push_back(chosen[job]);

  // Written before the run, partial: a run killed mid-way leaves reports that say so.
  report::RunReport run = report::makeRunReport(plan, *shard, jobs, {});
  run.partial = true;
  run.startedAt = startedAt;
  std::string torch;
#ifdef QGPU_TORCH_VERSION
  torch = QGPU_TORCH_VERSION;
#endif
  if (o.outputs.any() || common.json) run.provenance = report::collectProvenance(common.sourceDir, torch);
  if (o.outputs.any()) {
    Status written = writeReportOutputs(o.outputs, run, processCpuSeconds());
    if (!written.ok()) return reportError(written.error());
  }

  harness::CheckOptions options;
  options.compilers = *compilers;
  options.gpu = !o.noGpu;
  options.jobs = o.jobs;
  options.run.maxSteps = o.maxSteps;
#ifdef QGPU_HAVE_MODEL
  // The model legs: one checkpoint (given, or built once here), a session per dtype, each case
  // the circuit target's program token for token against the interpreter (--check's comparison).
  std::unique_ptr<harness::ModelLegs> legs;
  if (!modelLegs->empty()) {
    harness::ModelLegOptions mo;
    mo.checkpoint = o.modelCheckpoint;
    mo.tokenBudget = o.modelTokenBudget;
    mo.check = true;
    auto opened = harness::ModelLegs::open(mo, *modelLegs, o.jobs);
    if (!opened.ok()) return reportError(opened.error());
    legs = std::move(*opened);
    if (!common.json) std::cerr << "model: " << legs->description() << "\n";
    options.modelLegs = *modelLegs;
    options.modelCase = [&legs](const kernels::KernelSpec& spec, host::Compiler c, harness::Backend leg) {
      return legs->run(spec, c, leg);
    };
  }
#endif
  // On a terminal, a bar once the run has taken 2 s (progress.h); nothing when stderr is not one.
  ProgressBar progress(mine.size() * plan.casesPerKernel(), progressWanted(2, common.json));
  // ... and the reports rewritten as cases finish, at most once a second (each write is a whole
  // atomic rewrite). A failed rewrite is not fatal here: the final write repeats it and reports it.
  std::map<std::string, size_t> jobOf;
  for (size_t k = 0; k < plan.kernels.size(); ++k) jobOf[plan.kernels[k]] = k;
  auto lastWrite = std::chrono::steady_clock::now();
  options.onCase = [&](const harness::CaseResult& c) {
    progress.tick(c.kernel);
    if (!o.outputs.any()) return;
    run.cases.push_back({jobOf[c.kernel], c});
    auto now = std::chrono::steady_clock::now();
    if (now - lastWrite < std::chrono::seconds(1)) return;
    lastWrite = now;
    (void)writeReportOutputs(o.outputs, run, processCpuSeconds());
  };
  // --traces: every interpreter case that ran leaves its full trace (prompt + run) as a trace
  // record; the first write that fails is reported after the run.
  std::optional<Diag> traceWriteError;
  if (!o.outputs.traces.empty())
    options.onInterpCase = [&](const harness::InterpCase& c) {
      if (!c.kernel.ok() || !c.run.ok() || traceWriteError) return;
      const harness::BuiltKernel& k = *c.kernel;
      audit::TraceRecord record = audit::makeTraceRecord(
          c.result, k.program, k.image.toMachineLaunch(), k.image.params, c.run->trace);
      std::string path = (std::filesystem::path(o.outputs.traces) /
                          report::traceFileName(c.result.kernel, c.result.compiler, c.result.backend))
                             .string();
      // Compact: a trace is up to millions of ids (dumpJson would put each on its own line).
      std::string text = audit::toJson(record).dump(-1, ' ', false,
                                                    nlohmann::json::error_handler_t::replace);
      Status written = writeFileAtomic(path, text + "\n");
      if (!written.ok()) traceWriteError = written.error();
    };
  harness::CheckReport report = harness::runCheck(mine, options);
  progress.finish();
  if (traceWriteError) return reportError(*traceWriteError);
  int code = harness::exitCodeFor(report);

  report::Provenance provenance = std::move(run.provenance);
  run = report::makeRunReport(plan, *shard, jobs, report);
  run.startedAt = startedAt;
  run.finishedAt = report::utcNow();
  run.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  run.provenance = std::move(provenance);
  report::setGpu(run.provenance, report.gpuName, report.gpuDriverVersion);
  if (o.outputs.any()) {
    Status written = writeReportOutputs(o.outputs, run, processCpuSeconds());
    if (!written.ok()) return reportError(written.error());
  }
  if (common.json) {
    std::cout << dumpJson(report::toJson(run)) << "\n";
  } else {
    std::cout << harness::formatReport(report, o.verbose);
    if (shard->sharded())
      std::cout << "shard " << shard->index << "/" << shard->total << ": " << mine.size() << " of "
                << chosen.size() << " kernels; " << report.total().total() << " cases\n";
    else
      std::cout << chosen.size() << " kernels; " << report.total().total() << " cases\n";
    if (code != kExitOk) std::cout << "reproduce with: " << commandLine() << "\n";
  }
  return code;
}

}  // namespace

Command addCheckCommand(CLI::App& root, const CommonOptions& common) {
  static CheckCmdOptions o;
  CLI::App* app = root.add_subcommand(
      "check", "Run the kernel catalog through every compiler and backend (the main job)");
  app->add_option("--compiler", o.compiler, "clang, nvcc or both")->capture_default_str();
  app->add_option("--kernel,-k", o.kernels, "Only these catalog kernels (repeatable)");
  app->add_option("--tag,-t", o.tags, "Only kernels with one of these tags (repeatable)");
  app->add_flag("--no-gpu", o.noGpu, "Do not try the GPU backend");
  app->add_flag("--list", o.list, "List the selected kernels and exit");
  app->add_flag("--verbose,-v", o.verbose, "Print matching cases too");
  addReportOutputOptions(app, o.outputs, "--report", /*withManifest=*/true);
  app->add_option("--out", o.out,
                  "Record the run in DIR: report.json, manifest.json and traces/ (for `qgpu audit`)");
  app->add_option("--shard", o.shard,
                  "Run shard i of n (0-based, 'i/n'; default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS)");
  app->add_option("--balance", o.balance,
                  "Balance the shards by the case times of this previous JSON report");
  app->add_option("--jobs,-j", o.jobs, "Kernels built in parallel")->capture_default_str();
  app->add_option("--model", o.models,
                  "Model legs: fp32 and/or bf16 (comma-separated or repeated); each kernel's circuit "
                  "target program through the compiled model, token for token against the interpreter")
      ->delimiter(',');
  app->add_option("--model-checkpoint", o.modelCheckpoint,
                  "--model: a checkpoint `qgpu circuit build` wrote (default: build one, 14 GB, removed after)");
  app->add_option("--model-token-budget", o.modelTokenBudget,
                  "--model: most run tokens a case generates (a run still going is inconclusive)")
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}))
      ->capture_default_str();
  addMaxStepsOption(app, o.maxSteps);
  return {app, [&common] { return runCheckCommand(o, common); }};
}

}  // namespace qgpu::cli
