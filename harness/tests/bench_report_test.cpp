// qgpu/harness/tests/bench_report_test.cpp — `qgpu bench report` (harness/bench_report.h): the
// Mann-Whitney U p-values against hand-worked ones, the reader of Google Benchmark JSON (and its
// refusals), and the gate on synthetic pairs: no regression, a slowdown within noise, a real
// regression, and each one's twin (a threshold that allows it, too few repetitions).
#include <gtest/gtest.h>

#include <cmath>

#include "harness/bench_report.h"

namespace qgpu::bench {
namespace {

using Json = nlohmann::json;

// Google Benchmark JSON of benchmarks with repetitions: one iteration run per sample, plus the
// aggregates it writes (which the reader ignores: they carry deliberately wrong values here).
std::string benchJson(const std::map<std::string, std::vector<double>>& samples,
                      const std::string& unit = "ns",
                      const std::map<std::string, double>& counters = {}) {
  Json list = Json::array();
  for (const auto& [name, values] : samples) {
    for (size_t i = 0; i < values.size(); ++i) {
      Json e = {{"name", name},
                {"run_name", name},
                {"run_type", "iteration"},
                {"repetitions", values.size()},
                {"repetition_index", i},
                {"threads", 1},
                {"iterations", 1000},
                {"real_time", values[i]},
                {"cpu_time", values[i]},
                {"time_unit", unit}};
      for (const auto& [k, v] : counters) e[k] = v;
      list.push_back(e);
    }
    list.push_back({{"name", name + "_median"},
                    {"run_name", name},
                    {"run_type", "aggregate"},
                    {"aggregate_name", "median"},
                    {"real_time", 1e12},
                    {"cpu_time", 1e12},
                    {"time_unit", unit}});
  }
  return Json{{"context", {{"host_name", "test"}}}, {"benchmarks", list}}.dump();
}

BenchRun parse(const std::string& text) {
  auto r = parseBenchJson(text, "b.json");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? *r : BenchRun{};
}

const std::vector<double> kBase = {100, 101, 99, 98, 102};  // median 100, no ties

// n1 = n2 = 5, no overlap: U = 0, and 2 of the C(10,5) = 252 orderings are as extreme.
TEST(MannWhitney, ExactTwoSidedPOfSeparatedSamples) {
  std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
  EXPECT_NEAR(mannWhitneyP(a, b), 2.0 / 252, 1e-12);
  EXPECT_NEAR(mannWhitneyP(b, a), 2.0 / 252, 1e-12);
  std::vector<double> c = {1, 2, 3}, d = {4, 5, 6};  // 2 of C(6,3) = 20
  EXPECT_NEAR(mannWhitneyP(c, d), 0.1, 1e-12);
}

// a = {1,3,5}, b = {2,4,6}: U_a = 3; orderings with U <= 3 are the partitions of 0..3 into at
// most 3 parts of at most 3: 1 + 1 + 2 + 3 = 7 of 20, two-sided 14/20.
TEST(MannWhitney, ExactTwoSidedPOfInterleavedSamples) {
  std::vector<double> a = {1, 3, 5}, b = {2, 4, 6};
  EXPECT_NEAR(mannWhitneyP(a, b), 0.7, 1e-12);
}

// Ten 1s against ten 2s: ties, so the normal approximation. U = 0 (or 100), mean 50, variance
// 100/12 * (21 - 2 * (10^3 - 10) / (20 * 19)) = 131.5789..., z = (100 - 50 - 0.5) / sqrt(var)
// = 4.31531, p = erfc(z / sqrt 2) = 1.59379e-5.
TEST(MannWhitney, NormalApproximationWithTies) {
  std::vector<double> a(10, 1.0), b(10, 2.0);
  EXPECT_NEAR(mannWhitneyP(a, b), 1.59379e-5, 1e-9);
  EXPECT_DOUBLE_EQ(mannWhitneyP(a, a), 1.0);  // all tied: no evidence at all
  EXPECT_DOUBLE_EQ(mannWhitneyP(a, {}), 1.0);
}

TEST(BenchJson, ReadsIterationRunsAsSamplesAndIgnoresAggregates) {
  BenchRun run = parse(benchJson({{"BM_A", {1, 2, 3}}}, "us", {{"tokens", 5e6}}));
  ASSERT_EQ(run.benchmarks.size(), 1u);
  const Benchmark& b = run.benchmarks[0];
  EXPECT_EQ(b.name, "BM_A");
  EXPECT_EQ(b.samples, (std::vector<double>{1000, 2000, 3000}));  // us -> ns
  EXPECT_DOUBLE_EQ(b.median(), 2000);
  EXPECT_DOUBLE_EQ(b.cv(), 0.5);  // sample stddev 1000 / mean 2000
  EXPECT_DOUBLE_EQ(b.counters.at("tokens"), 5e6);
  EXPECT_EQ(b.counters.count("iterations"), 0u);  // Google Benchmark's own keys are no counters
  EXPECT_EQ(run.host, "test");
}

TEST(BenchJson, RefusesCorruptAndForeignFiles) {
  std::string good = benchJson({{"BM_A", {1, 2}}});
  for (const std::string& bad :
       {good.substr(0, good.size() / 2), std::string("[1, 2]"), std::string("{\"magic\": 1}"),
        std::string(R"({"benchmarks": [{"real_time": 1}]})"),
        std::string(R"({"benchmarks": [{"name": "BM_A", "real_time": -1}]})"),
        std::string(R"({"benchmarks": [{"name": "BM_A", "real_time": "fast"}]})"),
        std::string(R"({"benchmarks": [{"name": "BM_A", "real_time": 1, "time_unit": "ks"}]})"),
        std::string(R"({"benchmarks": [{"name": "BM_A", "real_time": 1, "run_type": "x"}]})"),
        std::string(R"({"benchmarks": [7]})")}) {
    auto r = parseBenchJson(bad, "b.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid) << bad;
    EXPECT_EQ(r.error().loc.file, "b.json");
  }
}

// Google Benchmark 1.7 writes "tokens": NaN in the cv aggregate of a counter that is 0/0; a
// string that says NaN stays a string.
TEST(BenchJson, AcceptsTheBareNaNGoogleBenchmarkWrites) {
  BenchRun run = parse(R"({"benchmarks": [
      {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "real_time": 5,
       "label": "NaN, Infinity", "tokens": 2},
      {"name": "BM_A_cv", "run_name": "BM_A", "run_type": "aggregate", "real_time": 0.1,
       "tokens": NaN, "steps": -Infinity}]})");
  ASSERT_EQ(run.benchmarks.size(), 1u);
  EXPECT_EQ(run.benchmarks[0].samples, std::vector<double>{5});
  EXPECT_DOUBLE_EQ(run.benchmarks[0].counters.at("tokens"), 2);
  auto bad = parseBenchJson(R"({"benchmarks": [{"name": "BM_A", "real_time": NaN}]})", "b.json");
  ASSERT_FALSE(bad.ok());  // a time must be a number
  EXPECT_EQ(bad.error().kind, ErrorKind::ReportInvalid);
}

TEST(BenchJson, AnErroredBenchmarkIsKeptWithItsMessage) {
  BenchRun run = parse(R"({"benchmarks": [{"name": "BM_A", "run_name": "BM_A",
      "run_type": "iteration", "error_occurred": true, "error_message": "no kernel"}]})");
  ASSERT_EQ(run.benchmarks.size(), 1u);
  EXPECT_TRUE(run.benchmarks[0].errored);
  EXPECT_EQ(run.benchmarks[0].error, "no kernel");
}

TEST(Thresholds, ReadsDefaultsAndPerBenchmarkFractions) {
  auto t = parseThresholds(
      R"({"magic": "qgpu-bench-thresholds", "version": 1, "alpha": 0.01,
          "defaultSlowdown": 0.2, "slowdown": {"BM_A": 0.5}})",
      "t.json");
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_DOUBLE_EQ(t->alpha, 0.01);
  EXPECT_DOUBLE_EQ(t->forBenchmark("BM_A"), 0.5);
  EXPECT_DOUBLE_EQ(t->forBenchmark("BM_B"), 0.2);
  for (const char* bad :
       {R"({"magic": "x", "version": 1})", R"({"magic": "qgpu-bench-thresholds", "version": 2})",
        R"({"magic": "qgpu-bench-thresholds", "version": 1, "alpha": 0})",
        R"({"magic": "qgpu-bench-thresholds", "version": 1, "slowdown": {"A": -1}})", "{"}) {
    auto r = parseThresholds(bad, "t.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);
  }
}

const Row& rowOf(const Comparison& c, const std::string& name) {
  for (const Row& r : c.rows)
    if (r.name == name) return r;
  ADD_FAILURE() << "no row " << name;
  static Row none;
  return none;
}

TEST(BenchGate, NoRegressionWhenTheRunMatchesTheBaseline) {
  BenchRun base = parse(benchJson({{"BM_A", kBase}}));
  BenchRun run = parse(benchJson({{"BM_A", {100, 99, 101, 100, 101}}}));
  Comparison c = compare(run, &base, Thresholds{});
  EXPECT_EQ(rowOf(c, "BM_A").change, Change::Same);
  EXPECT_FALSE(c.regressed());
}

// +20% at the median, but the repetitions straddle the baseline's (70..130 against 99..102):
// U = 10 of 25, far from significant (exact p = 0.69).
TEST(BenchGate, ASlowdownWithinTheNoiseDoesNotFail) {
  BenchRun base = parse(benchJson({{"BM_A", kBase}}));
  BenchRun run = parse(benchJson({{"BM_A", {70, 130, 125, 80, 120}}}));
  Comparison c = compare(run, &base, Thresholds{});
  const Row& r = rowOf(c, "BM_A");
  EXPECT_NEAR(r.relative, 0.20, 1e-12);
  EXPECT_EQ(r.change, Change::WithinNoise);
  ASSERT_TRUE(r.p.has_value());
  EXPECT_GT(*r.p, 0.05);
  EXPECT_FALSE(c.regressed());
}

// +31%, every repetition slower than every baseline one (no ties): p = 2/252 < 0.05.
TEST(BenchGate, ARealRegressionFails) {
  BenchRun base = parse(benchJson({{"BM_A", kBase}}));
  BenchRun run = parse(benchJson({{"BM_A", {130, 131, 129, 133, 132}}}));
  Comparison c = compare(run, &base, Thresholds{});
  const Row& r = rowOf(c, "BM_A");
  EXPECT_NEAR(r.relative, 0.31, 1e-12);
  EXPECT_NEAR(*r.p, 2.0 / 252, 1e-12);
  EXPECT_EQ(r.change, Change::Regression);
  EXPECT_TRUE(c.regressed());
  EXPECT_NE(formatComparison(c).find("REGRESSION"), std::string::npos);
}

// The twin of the regression: the same data under a 50% threshold for this benchmark.
TEST(BenchGate, APerBenchmarkThresholdAllowsTheSameSlowdown) {
  BenchRun base = parse(benchJson({{"BM_A", kBase}}));
  BenchRun run = parse(benchJson({{"BM_A", {130, 131, 129, 133, 132}}}));
  Thresholds t;
  t.slowdown["BM_A"] = 0.5;
  EXPECT_EQ(rowOf(compare(run, &base, t), "BM_A").change, Change::Same);
}

TEST(BenchGate, OneRepetitionCannotBeTested) {
  BenchRun base = parse(benchJson({{"BM_A", {100}}}));
  BenchRun run = parse(benchJson({{"BM_A", {200}}}));
  Comparison c = compare(run, &base, Thresholds{});
  EXPECT_EQ(rowOf(c, "BM_A").change, Change::TooFewRepetitions);
  EXPECT_FALSE(rowOf(c, "BM_A").p.has_value());
  EXPECT_FALSE(c.regressed());
}

TEST(BenchGate, FasterNewAndMissingBenchmarks) {
  BenchRun base = parse(benchJson({{"BM_A", kBase}, {"BM_Gone", kBase}}));
  BenchRun run = parse(benchJson({{"BM_A", {50, 51, 49, 50, 52}}, {"BM_New", kBase}}));
  Comparison c = compare(run, &base, Thresholds{});
  EXPECT_EQ(rowOf(c, "BM_A").change, Change::Faster);
  EXPECT_EQ(rowOf(c, "BM_New").change, Change::NoBaseline);
  EXPECT_EQ(rowOf(c, "BM_Gone").change, Change::Missing);
  EXPECT_FALSE(c.regressed());
}

// The interpreter's trace tokens per second against MISSION.md's figures: 3e6 tokens/s is
// 200,000 times qwenGPU's 15 tokens/s and 100 times Percepta's 30,000.
TEST(BenchAnchors, TheInterpreterIsComparedWithTheMissionFigures) {
  BenchRun run =
      parse(benchJson({{"BM_InterpreterLoopWithTrace", kBase}}, "ns", {{"tokens", 3e6}}));
  Comparison c = compare(run, nullptr, Thresholds{});
  const Row& r = rowOf(c, "BM_InterpreterLoopWithTrace");
  ASSERT_EQ(r.anchors.size(), 3u);
  EXPECT_DOUBLE_EQ(r.anchors[0].ratio(), 200000);
  EXPECT_DOUBLE_EQ(r.anchors[2].ratio(), 100);
  EXPECT_FALSE(c.gated);
  std::string html = htmlSection(c);
  EXPECT_NE(html.find("id=\"anchors\""), std::string::npos);
  EXPECT_NE(html.find("data-bench=\"BM_InterpreterLoopWithTrace\""), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::bench
