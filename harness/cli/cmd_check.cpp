// qgpu/harness/cli/cmd_check.cpp — `qgpu check`: the main job. Runs the kernel catalog through
// every compiler and every backend available here and prints one line per case that did not
// match, then the counts. `--report FILE` writes the full JSON report (reports/ for nightly CI).
#include <fstream>
#include <iostream>
#include <set>

#include "common/text.h"

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
  std::string reportPath;
  int jobs = 2;
  uint64_t maxSteps = 1'000'000;
};

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
  auto catalog = kernels::loadCatalog(catalogDir(common));
  if (!catalog.ok()) return reportError(catalog.error());
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

  harness::CheckOptions options;
  options.compilers = *compilers;
  options.gpu = !o.noGpu;
  options.jobs = o.jobs;
  options.run.maxSteps = o.maxSteps;
  harness::CheckReport report = harness::runCheck(chosen, options);
  int code = harness::exitCodeFor(report);

  if (!o.reportPath.empty()) {
    std::ofstream file(o.reportPath);
    file << dumpJson(harness::toJson(report)) << "\n";
    if (!file) return reportError(makeDiag(ErrorKind::Io, "cannot write '" + echo(o.reportPath) + "'"));
  }
  if (common.json) {
    std::cout << dumpJson(harness::toJson(report)) << "\n";
  } else {
    std::cout << harness::formatReport(report, o.verbose);
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
  app->add_option("--report", o.reportPath, "Write the full JSON report to this file");
  app->add_option("--jobs,-j", o.jobs, "Kernels built in parallel")->capture_default_str();
  addMaxStepsOption(app, o.maxSteps);
  return {app, [&common] { return runCheckCommand(o, common); }};
}

}  // namespace qgpu::cli
