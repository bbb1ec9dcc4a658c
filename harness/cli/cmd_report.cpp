// qgpu/harness/cli/cmd_report.cpp — `qgpu report merge A.json B.json ... --out M.json`: the
// shard reports of one run (`check --shard i/n --report`) into the report of the whole run,
// with its JUnit XML and HTML page if asked (docs/reports.md).
//
// Exit codes (command.h): a report that is corrupt, foreign or does not fit the others is
// ReportInvalid (2), a file that cannot be read or written Io (2); otherwise the merged run's
// own exit code, as `check` would have given it unsharded (0, 1, 3 or 4).
#include <iostream>

#include "harness/check.h"
#include "harness/cli/command.h"
#include "harness/cli/report_outputs.h"
#include "harness/cli/util.h"
#include "harness/report/merge.h"

namespace qgpu::cli {

namespace {

struct ReportMergeOptions {
  std::vector<std::string> inputs;  // the shard reports
  ReportOutputs outputs;
};

int runMerge(const ReportMergeOptions& o, const CommonOptions& common) {
  std::vector<report::RunReport> reports;
  for (const std::string& path : o.inputs) {
    auto r = report::readReport(path);
    if (!r.ok()) return reportError(r.error());
    reports.push_back(std::move(r).value());
  }
  auto merged = report::mergeReports(reports, o.inputs);
  if (!merged.ok()) return reportError(merged.error());
  Status written = writeReportOutputs(o.outputs, *merged, 0);
  if (!written.ok()) return reportError(written.error());
  harness::CheckReport check;  // for the one text summary `check` prints
  for (const report::ReportCase& c : merged->cases) check.cases.push_back(c.result);
  check.tallies = merged->tallies();
  check.gpuDevice = merged->gpuDevice;
  int code = harness::exitCodeFor(check);
  if (common.json) {
    std::cout << dumpJson(report::toJson(*merged)) << "\n";
  } else {
    std::cout << harness::formatReport(check, false);
    std::cout << reports.size() << " reports; " << merged->plan.kernels.size() << " kernels; "
              << merged->cases.size() << " cases\n";
  }
  return code;
}

}  // namespace

Command addReportCommand(CLI::App& root, const CommonOptions& common) {
  static ReportMergeOptions merge;
  CLI::App* app = root.add_subcommand("report", "Run reports: merge shard reports");
  app->require_subcommand(1);
  CLI::App* m = app->add_subcommand(
      "merge", "Merge the shard reports of one run (check --shard i/n --report) into one");
  m->add_option("reports", merge.inputs, "The shard reports (JSON)")->required();
  addReportOutputOptions(m, merge.outputs, "--out,--report", /*withManifest=*/false);
  return {app, [&common, m] {
            if (m->parsed()) return runMerge(merge, common);
            return reportError(makeDiag(ErrorKind::Usage, "report: no subcommand"));
          }};
}

}  // namespace qgpu::cli
