// qgpu/harness/cli/report_outputs.cpp — see report_outputs.h.
#include "harness/cli/report_outputs.h"

#include "harness/cli/util.h"
#include "common/file.h"
#include "harness/report/html.h"
#include "harness/report/junit.h"
#include "harness/report/manifest.h"

namespace qgpu::cli {

void addReportOutputOptions(CLI::App* app, ReportOutputs& out, const std::string& jsonFlag,
                            bool withManifest) {
  app->add_option(jsonFlag, out.report, "Write the JSON run report (docs/reports.md) to FILE");
  app->add_option("--junit", out.junit, "Write a JUnit XML report to FILE");
  app->add_option("--html", out.html, "Write a self-contained HTML report to FILE");
  if (withManifest)
    app->add_option("--manifest", out.manifest, "Write the provenance manifest to FILE");
}

Status writeReportOutputs(const ReportOutputs& out, const report::RunReport& r,
                          double cpuSeconds) {
  if (!out.report.empty())
    QGPU_CHECK(writeFileAtomic(out.report, dumpJson(report::toJson(r)) + "\n"));
  if (!out.manifest.empty())
    QGPU_CHECK(writeFileAtomic(
        out.manifest, dumpJson(report::manifestJson(r, commandLine(), cpuSeconds)) + "\n"));
  if (!out.junit.empty()) QGPU_CHECK(writeFileAtomic(out.junit, report::junitXml(r)));
  if (!out.html.empty()) QGPU_CHECK(writeFileAtomic(out.html, report::htmlReport(r)));
  return Ok{};
}

}  // namespace qgpu::cli
