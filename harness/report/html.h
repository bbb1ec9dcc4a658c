// qgpu/harness/report/html.h — the run report as one self-contained HTML page: inline CSS and
// SVG, no script, nothing fetched from a network (docs/reports.md).
//
// The page has: the provenance (commit, host, tools, times; a banner when the report is
// partial); a summary table per leg and compiler with the verdict counts and their total; a
// stacked bar per leg and compiler of those counts (SVG); a row per kernel with its verdict on
// every leg and compiler; the details of every case that did not match (the first difference,
// the error kind, the digests); and bar plots (SVG) of trace tokens and of wall time per kernel
// per leg and compiler. Every count cell carries data-leg, data-compiler and data-verdict (and
// the total row data-total) so a test or a script reads the counts without parsing the layout.
#pragma once

#include <string>
#include <vector>

#include "harness/report/json_report.h"

namespace qgpu::report {

// `extraSections`: HTML inserted before the end of the body (`qgpu bench report --html` adds its
// benchmark section, harness/bench_report.h).
std::string htmlReport(const RunReport& report, const std::string& extraSections = "");

// A standalone page in the same style: `title` (escaped) and `body` (HTML, as given).
std::string htmlPage(const std::string& title, const std::string& body);

// The page's horizontal bar plot (SVG), for other sections: one group of bars per row, one bar
// per series, `values[row][series]` to scale, labelled with `unit`.
std::string htmlBarPlot(const std::string& title, const std::vector<std::string>& rows,
                        const std::vector<std::string>& series,
                        const std::vector<std::vector<double>>& values, const std::string& unit);

}  // namespace qgpu::report
