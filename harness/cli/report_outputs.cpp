// qgpu/harness/cli/report_outputs.cpp — see report_outputs.h.
#include "harness/cli/report_outputs.h"

#include <filesystem>

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
  if (withManifest) {
    app->add_option("--manifest", out.manifest, "Write the provenance manifest to FILE");
    app->add_option("--traces", out.traces,
                    "Write every interpreter case's token trace into DIR, for `qgpu audit`");
  }
}

Status writeReportOutputs(const ReportOutputs& out, const report::RunReport& r,
                          double cpuSeconds) {
  if (!out.report.empty())
    QGPU_CHECK(writeFileAtomic(out.report, dumpJson(report::toJson(r)) + "\n"));
  if (!out.manifest.empty()) {
    // The traces' directory as the manifest names it: relative to the manifest's directory.
    std::string traces;
    if (!out.traces.empty()) {
      namespace fs = std::filesystem;
      fs::path base = fs::absolute(fs::path(out.manifest)).parent_path().lexically_normal();
      fs::path rel = fs::absolute(fs::path(out.traces)).lexically_normal().lexically_relative(base);
      traces = rel.empty() ? fs::absolute(out.traces).string() : rel.string();
      while (traces.size() > 1 && traces.back() == '/') traces.pop_back();
    }
    QGPU_CHECK(writeFileAtomic(
        out.manifest,
        dumpJson(report::manifestJson(r, commandLine(), cpuSeconds, traces)) + "\n"));
  }
  if (!out.junit.empty()) QGPU_CHECK(writeFileAtomic(out.junit, report::junitXml(r)));
  if (!out.html.empty()) QGPU_CHECK(writeFileAtomic(out.html, report::htmlReport(r)));
  return Ok{};
}

}  // namespace qgpu::cli
