// qgpu/harness/cli/cmd_bench.cpp — `qgpu bench report BENCH.json [--baseline B --thresholds T]`:
// Google Benchmark's JSON as a table with the anchors of MISSION.md, and the regression gate
// against a committed baseline (harness/bench_report.h, docs/reports.md "Benchmark reports").
// `--html FILE` writes the benchmark section as a page, or into the run's HTML page when
// `--run-report RUN.json` names the run report.
//
// Exit codes (common/outcome.h): 0 no regression; 5 (kExitRegression) a benchmark is slower than
// the baseline beyond its threshold and beyond the noise (Mann-Whitney U, p < alpha); 4 a baseline
// was given and no benchmark could be tested against it (none in common, too few repetitions);
// 2 a corrupt or foreign benchmark, baseline or thresholds file (ReportInvalid) or an unreadable
// one (Io).
#include <iostream>

#include "harness/bench_report.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "common/file.h"
#include "harness/report/html.h"
#include "harness/report/json_report.h"

namespace qgpu::cli {

namespace {

struct BenchReportOptions {
  std::string bench;       // Google Benchmark JSON of this run
  std::string baseline;    // --baseline: the committed one (bench/baseline.json)
  std::string thresholds;  // --thresholds: bench/thresholds.json
  std::string html;        // --html FILE
  std::string runReport;   // --run-report: the run report whose HTML page gets the section
};

int runBenchReport(const BenchReportOptions& o, const CommonOptions& common) {
  auto run = bench::readBenchJson(o.bench);
  if (!run.ok()) return reportError(run.error());
  std::optional<bench::BenchRun> baseline;
  if (!o.baseline.empty()) {
    auto b = bench::readBenchJson(o.baseline);
    if (!b.ok()) return reportError(b.error());
    baseline = std::move(b).value();
  }
  bench::Thresholds thresholds;
  if (!o.thresholds.empty()) {
    auto t = bench::readThresholds(o.thresholds);
    if (!t.ok()) return reportError(t.error());
    thresholds = std::move(t).value();
  }
  bench::Comparison c = bench::compare(*run, baseline ? &*baseline : nullptr, thresholds);
  if (!o.html.empty()) {
    std::string page;
    if (!o.runReport.empty()) {
      auto report = report::readReport(o.runReport);
      if (!report.ok()) return reportError(report.error());
      page = report::htmlReport(*report, bench::htmlSection(c));
    } else {
      page = report::htmlPage("qgpu bench report", bench::htmlSection(c));
    }
    Status written = writeFileAtomic(o.html, page);
    if (!written.ok()) return reportError(written.error());
  }
  int code = kExitOk;
  if (c.regressed()) {
    code = kExitRegression;
  } else if (c.gated) {
    bool tested = std::any_of(c.rows.begin(), c.rows.end(),
                              [](const bench::Row& r) { return r.p.has_value(); });
    if (!tested) code = kExitInconclusive;
  }
  if (common.json) {
    nlohmann::json j = bench::toJson(c);
    j["exit"] = code;
    std::cout << dumpJson(j) << "\n";
  } else {
    std::cout << bench::formatComparison(c);
    if (code != kExitOk) std::cout << "reproduce with: " << commandLine() << "\n";
  }
  return code;
}

}  // namespace

Command addBenchCommand(CLI::App& root, const CommonOptions& common) {
  static BenchReportOptions o;
  CLI::App* app = root.add_subcommand("bench", "Benchmark reports and the regression gate");
  app->require_subcommand(1);
  CLI::App* r = app->add_subcommand(
      "report", "Google Benchmark JSON as a table with the anchors; --baseline gates regressions");
  r->add_option("bench", o.bench, "Google Benchmark JSON (--benchmark_out_format=json)")
      ->required();
  r->add_option("--baseline", o.baseline, "The baseline to compare with (bench/baseline.json)");
  r->add_option("--thresholds", o.thresholds, "Allowed slowdowns (bench/thresholds.json)");
  r->add_option("--html", o.html, "Write the benchmark section as an HTML page to FILE");
  r->add_option("--run-report", o.runReport,
                "With --html: the run report (JSON) whose HTML page gets the benchmark section");
  return {app, [&common, r] {
            if (r->parsed()) return runBenchReport(o, common);
            return reportError(makeDiag(ErrorKind::Usage, "bench: no subcommand"));
          }};
}

}  // namespace qgpu::cli
