// qgpu/harness/cli/report_outputs.h — the report files a run writes, as flags defined once for
// `check` and `report merge`: --report (JSON), --junit, --html, --manifest (check only).
//
// Every file is written atomically (common/file.h writeFileAtomic). `check` writes each requested
// file at the start, marked partial and with no cases, again (still partial) at most once a
// second as cases finish, and at the end, complete: a run killed mid-way leaves files that say
// they are partial and hold the cases done so far, never a stale or torn report.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "common/diag.h"
#include "harness/report/json_report.h"

namespace qgpu::cli {

struct ReportOutputs {
  std::string report;    // --report FILE: the JSON run report
  std::string junit;     // --junit FILE
  std::string html;      // --html FILE
  std::string manifest;  // --manifest FILE (check only)
  std::string traces;    // --traces DIR (check only): one trace record per interpreter case
                         // (harness/audit.h), named in the manifest for `qgpu audit`
  bool any() const { return !report.empty() || !junit.empty() || !html.empty() || !manifest.empty(); }
};

// `jsonFlag`: the name(s) of the JSON report's flag ("--report"; merge: "--out,--report").
// `withManifest` (check): --manifest and --traces too.
void addReportOutputOptions(CLI::App* app, ReportOutputs& out, const std::string& jsonFlag,
                            bool withManifest);

// Writes every requested file; the first error stops (Io naming the file).
Status writeReportOutputs(const ReportOutputs& out, const report::RunReport& report,
                          double cpuSeconds);

}  // namespace qgpu::cli
