// qgpu/harness/report/html.cpp — see html.h.
#include "harness/report/html.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/report/markup.h"

namespace qgpu::report {

namespace {

using harness::Backend;
using harness::CaseResult;
using Key = std::pair<Backend, std::string>;

std::string esc(std::string_view text) {
  return escapeMarkup(text, MarkupContext::Content);
}

std::string fmt(double v, const char* format = "%.3f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string legName(const Key& k) { return std::string(harness::backendName(k.first)) + " " + k.second; }

// One colour per verdict, in Verdict order; the same in the tables and the plots.
constexpr const char* kVerdictColour[kNumVerdicts] = {"#2e7d32", "#c62828", "#9e9e9e", "#ef6c00"};
// One colour per leg and compiler series in the per-kernel plots.
constexpr const char* kSeriesColour[] = {"#1565c0", "#6a1b9a", "#00838f", "#ad1457",
                                         "#4e342e", "#558b2f"};

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f0f0f0}td.k{text-align:left;font-family:monospace}
td.match{background:#e8f5e9}td.mismatch{background:#ffebee}
td.inconclusive{background:#f5f5f5;color:#666}td.harness-error{background:#fff3e0}
.partial{background:#fff3e0;border:2px solid #ef6c00;padding:.5em;font-weight:bold}
pre{white-space:pre-wrap;margin:0}dl{display:grid;grid-template-columns:max-content auto;gap:0 1em}
dt{font-weight:bold}svg text{font:11px monospace}
)";

// A horizontal bar plot: one group of bars per row (one bar per series), values to scale.
std::string barPlot(const std::string& title, const std::vector<std::string>& rows,
                    const std::vector<std::string>& series,
                    const std::vector<std::vector<double>>& values, const std::string& unit) {
  double max = 0;
  for (const auto& row : values)
    for (double v : row) max = std::max(max, v);
  const int labelW = 200, plotW = 500, barH = 6, gap = 6;
  int groupH = static_cast<int>(series.size()) * barH + gap;
  int legendH = 16 * static_cast<int>(series.size()) + 8;
  int height = 24 + legendH + groupH * static_cast<int>(rows.size());
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << labelW + plotW + 120
    << "\" height=\"" << height << "\" role=\"img\"><title>" << esc(title) << "</title>\n";
  o << "<text x=\"0\" y=\"14\" style=\"font-weight:bold\">" << esc(title) << " (max " << fmt(max, "%.4g")
    << " " << esc(unit) << ")</text>\n";
  for (size_t s = 0; s < series.size(); ++s)
    o << "<rect x=\"" << labelW << "\" y=\"" << 24 + 16 * s << "\" width=\"10\" height=\"10\" fill=\""
      << kSeriesColour[s % std::size(kSeriesColour)] << "\"/><text x=\"" << labelW + 14 << "\" y=\""
      << 33 + 16 * s << "\">" << esc(series[s]) << "</text>\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    int y0 = 24 + legendH + static_cast<int>(r) * groupH;
    o << "<text x=\"" << labelW - 4 << "\" y=\"" << y0 + groupH / 2 + 3
      << "\" text-anchor=\"end\">" << esc(rows[r]) << "</text>\n";
    for (size_t s = 0; s < series.size() && s < values[r].size(); ++s) {
      double v = values[r][s];
      double w = max > 0 ? plotW * v / max : 0;
      o << "<rect x=\"" << labelW << "\" y=\"" << y0 + static_cast<int>(s) * barH << "\" width=\""
        << fmt(w, "%.1f") << "\" height=\"" << barH - 1 << "\" fill=\""
        << kSeriesColour[s % std::size(kSeriesColour)] << "\"><title>" << esc(rows[r]) << " "
        << esc(series[s]) << ": " << fmt(v, "%.6g") << " " << esc(unit) << "</title></rect>\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

// One stacked bar of verdict counts per leg and compiler.
std::string verdictPlot(const std::map<Key, Tally>& tallies) {
  int maxTotal = 1;
  for (const auto& [k, t] : tallies) maxTotal = std::max(maxTotal, t.total());
  const int labelW = 120, plotW = 500, barH = 18;
  int height = 40 + (barH + 6) * static_cast<int>(tallies.size());
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << labelW + plotW + 40 << "\" height=\""
    << height << "\" role=\"img\"><title>verdict counts</title>\n";
  for (int v = 0; v < kNumVerdicts; ++v)
    o << "<rect x=\"" << labelW + 130 * v << "\" y=\"4\" width=\"10\" height=\"10\" fill=\""
      << kVerdictColour[v] << "\"/><text x=\"" << labelW + 130 * v + 14 << "\" y=\"13\">"
      << verdictName(static_cast<Verdict>(v)) << "</text>\n";
  int row = 0;
  for (const auto& [k, t] : tallies) {
    int y = 30 + row++ * (barH + 6);
    o << "<text x=\"" << labelW - 4 << "\" y=\"" << y + 13 << "\" text-anchor=\"end\">"
      << esc(legName(k)) << "</text>\n";
    double x = labelW;
    for (int v = 0; v < kNumVerdicts; ++v) {
      int n = t.counts[v];
      if (n == 0) continue;
      double w = double(plotW) * n / maxTotal;
      o << "<rect x=\"" << fmt(x, "%.1f") << "\" y=\"" << y << "\" width=\"" << fmt(w, "%.1f")
        << "\" height=\"" << barH << "\" fill=\"" << kVerdictColour[v] << "\"><title>"
        << esc(legName(k)) << " " << verdictName(static_cast<Verdict>(v)) << ": " << n
        << "</title></rect>\n";
      x += w;
    }
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::string htmlPage(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + esc(title) +
         "</title>\n<style>" + kStyle + "</style></head><body>\n<h1>" + esc(title) + "</h1>\n" +
         body + "</body></html>\n";
}

std::string htmlBarPlot(const std::string& title, const std::vector<std::string>& rows,
                        const std::vector<std::string>& series,
                        const std::vector<std::vector<double>>& values, const std::string& unit) {
  return barPlot(title, rows, series, values, unit);
}

std::string htmlReport(const RunReport& r, const std::string& extraSections) {
  auto tallies = r.tallies();
  std::vector<Key> legs;
  for (const auto& [k, t] : tallies) legs.push_back(k);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>qgpu check "
    << esc(r.provenance.commit.substr(0, 12)) << "</title>\n<style>" << kStyle << "</style></head><body>\n";
  o << "<h1>qgpu check</h1>\n";
  if (r.partial)
    o << "<p class=\"partial\" id=\"partial\">Partial report: the run did not finish; the counts "
         "below are of the cases done so far.</p>\n";
  o << "<dl>\n";
  auto item = [&o](const std::string& k, const std::string& v) {
    o << "<dt>" << esc(k) << "</dt><dd>" << esc(v) << "</dd>\n";
  };
  item("commit", r.provenance.commit + (r.provenance.dirty == "true" ? " (dirty)" : ""));
  item("host", r.provenance.host);
  for (const auto& [tool, version] : r.provenance.tools) item(tool, version);
  item("gpu", r.gpuDevice.empty() ? "not tried" : r.gpuDevice);
  item("catalog", r.plan.catalogDigest + " (" + std::to_string(r.plan.catalogKernels) + " kernels)");
  item("plan", std::to_string(r.plan.kernels.size()) + " kernels × " +
                   std::to_string(r.plan.compilers.size()) + " compilers × " +
                   (r.plan.gpu ? "2 legs" : "1 leg") + ", shard " + std::to_string(r.shard.index) +
                   "/" + std::to_string(r.shard.total));
  item("started", r.startedAt);
  item("finished", r.finishedAt);
  item("wall time", fmt(r.wallSeconds, "%.2f") + " s");
  o << "</dl>\n";

  o << "<h2>Summary</h2>\n<table id=\"summary\"><tr><th>leg</th><th>compiler</th>";
  for (int v = 0; v < kNumVerdicts; ++v) o << "<th>" << verdictName(static_cast<Verdict>(v)) << "</th>";
  o << "</tr>\n";
  Tally total;
  for (const auto& [k, t] : tallies) {
    total += t;
    o << "<tr><td class=\"k\">" << harness::backendName(k.first) << "</td><td class=\"k\">"
      << esc(k.second) << "</td>";
    for (int v = 0; v < kNumVerdicts; ++v)
      o << "<td data-leg=\"" << harness::backendName(k.first) << "\" data-compiler=\""
        << escapeAttribute(k.second) << "\" data-verdict=\"" << verdictName(static_cast<Verdict>(v))
        << "\">" << t.counts[v] << "</td>";
    o << "</tr>\n";
  }
  o << "<tr><th colspan=\"2\">total</th>";
  for (int v = 0; v < kNumVerdicts; ++v)
    o << "<th data-total=\"" << verdictName(static_cast<Verdict>(v)) << "\">" << total.counts[v]
      << "</th>";
  o << "</tr></table>\n" << verdictPlot(tallies);

  // A row per kernel, a column per leg and compiler.
  std::map<size_t, std::map<Key, const CaseResult*>> byKernel;
  for (const ReportCase& c : r.cases) byKernel[c.job][{c.result.backend, c.result.compiler}] = &c.result;
  o << "<h2>Kernels</h2>\n<table id=\"kernels\"><tr><th>kernel</th>";
  for (const Key& k : legs) o << "<th>" << esc(legName(k)) << "</th>";
  o << "</tr>\n";
  std::vector<std::string> rowNames;
  std::vector<std::vector<double>> tokens, times;
  for (const auto& [job, cells] : byKernel) {
    std::string name = job < r.plan.kernels.size() ? r.plan.kernels[job] : "?";
    rowNames.push_back(name);
    tokens.emplace_back();
    times.emplace_back();
    o << "<tr><td class=\"k\">" << esc(name) << "</td>";
    for (const Key& k : legs) {
      auto it = cells.find(k);
      if (it == cells.end()) {
        o << "<td></td>";
        tokens.back().push_back(0);
        times.back().push_back(0);
        continue;
      }
      const CaseResult& c = *it->second;
      const char* v = verdictName(c.verdict);
      o << "<td class=\"" << v << "\" title=\"" << c.traceTokens << " tokens, "
        << fmt(c.wallSeconds) << " s\">" << v << "</td>";
      tokens.back().push_back(double(c.traceTokens));
      times.back().push_back(c.wallSeconds);
    }
    o << "</tr>\n";
  }
  o << "</table>\n";

  o << "<h2>Cases that did not match</h2>\n";
  int shown = 0;
  for (const ReportCase& rc : r.cases) {
    const CaseResult& c = rc.result;
    if (c.verdict == Verdict::Match) continue;
    if (shown++ == 0)
      o << "<table id=\"details\"><tr><th>kernel</th><th>leg</th><th>verdict</th><th>error</th>"
           "<th>first difference / reason</th><th>digests</th></tr>\n";
    o << "<tr><td class=\"k\">" << esc(c.kernel) << "</td><td class=\"k\">"
      << esc(legName({c.backend, c.compiler})) << "</td><td class=\"" << verdictName(c.verdict)
      << "\">" << verdictName(c.verdict) << "</td><td class=\"k\">"
      << (c.error ? kindName(*c.error) : "") << "</td><td class=\"k\"><pre>" << esc(c.detail)
      << "</pre></td><td class=\"k\">ptx " << esc(c.ptxDigest) << "<br>trace "
      << esc(c.traceDigest) << "</td></tr>\n";
  }
  o << (shown ? "</table>\n" : "<p>None.</p>\n");

  std::vector<std::string> series;
  for (const Key& k : legs) series.push_back(legName(k));
  o << "<h2>Plots</h2>\n"
    << barPlot("trace tokens per kernel", rowNames, series, tokens, "tokens")
    << barPlot("wall time per kernel", rowNames, series, times, "s");
  o << extraSections;
  o << "</body></html>\n";
  return o.str();
}

}  // namespace qgpu::report
