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

#include "common/text.h"
#include "harness/cli/report_outputs.h"
#include "harness/report/plan.h"
#include "harness/report/provenance.h"
#include "harness/report/shard.h"

#include "harness/check.h"
#include "harness/cli/command.h"
#include "harness/cli/steps.h"
#include "harness/cli/util.h"

namespace qgpu::cli {

namespace {

constexpr int kMaxJobs = 256;  // --jobs: worker threads

struct CheckCmdOptions {
  std::string compiler = "both";
  std::vector<std::string> kernels;  // only these (names)
  std::vector<std::string> tags;     // only kernels with one of these tags
  bool noGpu = false;
  bool list = false;
  bool verbose = false;
  ReportOutputs outputs;
  std::string shard;        // --shard i/n
  std::string balance;      // --balance REPORT
  int jobs = 2;
  uint64_t maxSteps = 1'000'000;
};

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

int runCheckCommand(const CheckCmdOptions& o, const CommonOptions& common) {
  auto started = std::chrono::steady_clock::now();
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

  auto shard = chooseShard(o.shard);
  if (!shard.ok()) return reportError(shard.error());
  for (const kernels::KernelSpec& spec : chosen) plan.kernels.push_back(spec.name);
  for (host::Compiler c : *compilers) plan.compilers.push_back(host::compilerName(c));
  plan.gpu = !o.noGpu;
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
  // ... and rewritten as cases finish, at most once a second (each write is a whole atomic
  // rewrite). A failed rewrite is not fatal here: the final write repeats it and reports it.
  std::map<std::string, size_t> jobOf;
  for (size_t k = 0; k < plan.kernels.size(); ++k) jobOf[plan.kernels[k]] = k;
  auto lastWrite = std::chrono::steady_clock::now();
  if (o.outputs.any())
    options.onCase = [&](const harness::CaseResult& c) {
      run.cases.push_back({jobOf[c.kernel], c});
      auto now = std::chrono::steady_clock::now();
      if (now - lastWrite < std::chrono::seconds(1)) return;
      lastWrite = now;
      (void)writeReportOutputs(o.outputs, run, processCpuSeconds());
    };
  harness::CheckReport report = harness::runCheck(mine, options);
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
  app->add_option("--shard", o.shard,
                  "Run shard i of n (0-based, 'i/n'; default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS)");
  app->add_option("--balance", o.balance,
                  "Balance the shards by the case times of this previous JSON report");
  app->add_option("--jobs,-j", o.jobs, "Kernels built in parallel")->capture_default_str();
  addMaxStepsOption(app, o.maxSteps);
  return {app, [&common] { return runCheckCommand(o, common); }};
}

}  // namespace qgpu::cli
