// qgpu/harness/bench_report.h — benchmark reports with a regression gate (`qgpu bench report`,
// issue 10 item 6; docs/reports.md "Benchmark reports").
//
// Reads Google Benchmark's JSON output (`--benchmark_out_format=json`, with
// `--benchmark_repetitions=N`): every iteration run is one sample of its benchmark (`run_name`,
// else `name`), its `real_time` in nanoseconds; aggregates (mean, median, stddev, cv) are ignored,
// since they are recomputed from the samples. A benchmark's counters are the median over its
// samples. The bare NaN and Infinity Google Benchmark writes for non-finite counters (the cv
// aggregate's, 0/0), which JSON has not, are read as null outside strings.
//
// The gate, as Google Benchmark's tools/compare.py decides it: a benchmark regressed when its
// median real time is slower than the baseline's by more than its threshold (the thresholds
// file) AND the two sets of repetitions differ beyond run-to-run noise: a two-sided Mann-Whitney
// U test with p < alpha (0.05 by default). A slowdown over the threshold that the test cannot
// tell from noise is `WithinNoise`, not a regression. Fewer than kMinRepetitions samples on
// either side cannot be tested: `TooFewRepetitions` (inconclusive, not a pass).
//
// Errors: every reader refuses, with ErrorKind::ReportInvalid (the file as the location, the JSON
// path in the message), a file that is not JSON, not Google Benchmark output (no `benchmarks`
// array), an entry without a name or with a time that is not a finite non-negative number, an
// unknown time unit; a thresholds file with another magic or version, or a threshold that is not
// a fraction in [0, 10]. They never throw.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/diag.h"

namespace qgpu::bench {

inline constexpr size_t kMaxBenchBytes = size_t{64} << 20;
inline constexpr size_t kMinRepetitions = 2;  // compare.py's UTEST_MIN_REPETITIONS
inline constexpr const char* kThresholdsMagic = "qgpu-bench-thresholds";
inline constexpr int kThresholdsVersion = 1;

struct Benchmark {
  std::string name;                        // run_name (the name without the aggregate suffix)
  std::vector<double> samples;             // real time per iteration, ns, one per repetition
  std::map<std::string, double> counters;  // user counters: the median over the repetitions
  bool errored = false;                    // a repetition reported error_occurred
  std::string error;                       // its error_message
  double median() const;                   // of samples (0 when none)
  double cv() const;                       // stddev / mean of samples (0 with fewer than 2)
};

struct BenchRun {
  std::string file;
  std::string host;                   // context.host_name, when given
  std::vector<Benchmark> benchmarks;  // in file order
  const Benchmark* find(const std::string& name) const;
};

Expected<BenchRun> parseBenchJson(const std::string& text, const std::string& file);
Expected<BenchRun> readBenchJson(const std::string& path);

struct Thresholds {
  double alpha = 0.05;                     // the U test's significance level
  double defaultSlowdown = 0.10;           // a median 10% slower fails, unless named below
  std::map<std::string, double> slowdown;  // benchmark name -> its own allowed fraction
  double forBenchmark(const std::string& name) const;
};
Expected<Thresholds> parseThresholds(const std::string& text, const std::string& file);
Expected<Thresholds> readThresholds(const std::string& path);

// The two-sided p-value of the Mann-Whitney U test of `a` against `b`: exact (the U distribution
// counted) when there are no ties and the smaller sample has at most 8 values, else the normal
// approximation with tie and continuity corrections — scipy.stats.mannwhitneyu's method='auto',
// which compare.py calls. 1 when either sample is empty.
double mannWhitneyP(std::span<const double> a, std::span<const double> b);

// One row per benchmark of the current run, then one per baseline benchmark it lacks.
enum class Change {
  NoBaseline,         // not in the baseline (a new benchmark): reported, not gated
  Missing,            // in the baseline, not in this run
  Errored,            // this run's benchmark reported an error
  TooFewRepetitions,  // fewer than kMinRepetitions samples on a side: the test cannot decide
  Same,               // within the threshold (or faster but not significantly)
  Faster,             // faster beyond the threshold and the noise
  WithinNoise,        // slower beyond the threshold, but not significantly (p >= alpha)
  Regression,         // slower beyond the threshold and significantly: the gate fails
};
const char* changeName(Change c);

// An anchor of ../shared/MISSION.md a benchmark is compared with (its counter against a
// reported figure of another system).
struct AnchorComparison {
  std::string anchor;      // "qwenGPU model, 10-15 tokens/s (MISSION.md)"
  std::string counter;     // the benchmark's counter ("tokens")
  double value = 0;        // its median, per second
  double anchorValue = 0;  // the anchor's figure, same unit
  double ratio() const { return anchorValue > 0 ? value / anchorValue : 0; }
};

struct Row {
  std::string name;
  Change change = Change::NoBaseline;
  double median = 0, cv = 0;  // this run (ns)
  size_t repetitions = 0;
  std::optional<double> baseMedian;  // the baseline's (ns)
  size_t baseRepetitions = 0;
  double relative = 0;  // (median - baseMedian) / baseMedian
  double threshold = 0;
  std::optional<double> p;  // the U test's p-value when it was computed
  std::vector<AnchorComparison> anchors;
};

struct Comparison {
  std::vector<Row> rows;
  bool gated = false;  // a baseline was given
  double alpha = 0.05;
  bool regressed() const;  // any Row is a Regression
};

// The rows of `run`, compared with `baseline` when given (then `thresholds` apply).
Comparison compare(const BenchRun& run, const BenchRun* baseline, const Thresholds& thresholds);

// The anchors table (one row per anchor: benchmark, counter, figure), as data.
struct Anchor {
  const char* benchmarkPrefix;  // benchmarks whose name starts with this
  const char* counter;          // their counter (a rate, per second)
  const char* what;             // the anchor, as MISSION.md states it
  double perSecond;             // its figure
};
std::span<const Anchor> anchors();

std::string formatComparison(const Comparison& c);
nlohmann::json toJson(const Comparison& c);
// An HTML section (h2, table, SVG plots of median times and of the relative change) for
// report::htmlReport's extraSections or report::htmlPage.
std::string htmlSection(const Comparison& c);

}  // namespace qgpu::bench
