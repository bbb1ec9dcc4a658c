// qgpu/harness/bench_report.cpp — see bench_report.h.
#include "harness/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/file.h"
#include "common/text.h"
#include "harness/report/html.h"
#include "harness/report/markup.h"

namespace qgpu::bench {

using Json = nlohmann::json;

namespace {

Diag invalid(const std::string& file, const std::string& path, const std::string& message) {
  return makeDiag(ErrorKind::ReportInvalid, (path.empty() ? "" : path + ": ") + message,
                  SourceLoc{file, 0, 0});
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nanoseconds per unit of Google Benchmark's `time_unit`.
std::optional<double> unitScale(const std::string& unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return std::nullopt;
}

// The keys of an iteration run that are Google Benchmark's own; every other number is a counter.
const std::set<std::string>& ownKeys() {
  static const std::set<std::string> keys = {"name",
                                             "family_index",
                                             "per_family_instance_index",
                                             "run_name",
                                             "run_type",
                                             "repetitions",
                                             "repetition_index",
                                             "threads",
                                             "iterations",
                                             "real_time",
                                             "cpu_time",
                                             "time_unit",
                                             "aggregate_name",
                                             "aggregate_unit",
                                             "error_occurred",
                                             "error_message",
                                             "label",
                                             "big_o",
                                             "rms"};
  return keys;
}

// The anchors of ../shared/MISSION.md, one row each. The interpreter's trace tokens per second
// are the reference's speed; the model leg's decode rate is what qwenGPU's figure measures.
constexpr Anchor kAnchors[] = {
    {"BM_InterpreterLoopWithTrace", "tokens", "qwenGPU model: 10-15 tokens/s", 15},
    {"BM_InterpreterLoopWithTrace", "tokens", "Qwenputer: ~3,200 tokens/s (NVIDIA L4)", 3200},
    {"BM_InterpreterLoopWithTrace", "tokens", "Percepta: >30,000 tokens/s (CPU)", 30000},
    {"BM_Decode", "tokens_per_s", "qwenGPU model: 10-15 tokens/s", 15},
    {"BM_Decode", "tokens_per_s", "Qwenputer: ~3,200 tokens/s (NVIDIA L4)", 3200},
};

std::string fmtTime(double ns) {
  char buf[48];
  if (ns < 1e3)
    std::snprintf(buf, sizeof buf, "%.1f ns", ns);
  else if (ns < 1e6)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else if (ns < 1e9)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  return buf;
}

std::string fmt(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Google Benchmark writes a non-finite number (a counter of the cv aggregate, 0/0) as a bare
// NaN or Infinity, which JSON has not: outside strings, each becomes null (never a sample or a
// counter: both must be numbers).
std::string nonFiniteAsNull(const std::string& text) {
  static const char* const kWords[] = {"-Infinity", "Infinity", "-NaN", "NaN",
                                       "-nan",      "nan",      "-inf", "inf"};
  std::string out;
  out.reserve(text.size());
  bool inString = false;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (inString) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        inString = false;
      ++i;
      continue;
    }
    if (c == '"') inString = true;
    bool replaced = false;
    if (c == 'N' || c == 'I' || c == 'n' || c == 'i' || c == '-')
      for (const char* w : kWords) {
        size_t n = std::char_traits<char>::length(w);
        if (text.compare(i, n, w) == 0) {
          out += "null";
          i += n;
          replaced = true;
          break;
        }
      }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace

double Benchmark::median() const {
  return medianOf(samples);
}

double Benchmark::cv() const {
  if (samples.size() < 2) return 0;
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= double(samples.size());
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  var /= double(samples.size() - 1);  // as Google Benchmark's stddev aggregate (sample stddev)
  return mean > 0 ? std::sqrt(var) / mean : 0;
}

const Benchmark* BenchRun::find(const std::string& name) const {
  for (const Benchmark& b : benchmarks)
    if (b.name == name) return &b;
  return nullptr;
}

Expected<BenchRun> parseBenchJson(const std::string& text, const std::string& file) {
  Json doc = Json::parse(nonFiniteAsNull(text), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return invalid(file, "", "not JSON (a corrupt or truncated benchmark file)");
  if (!doc.is_object()) return invalid(file, "", "not a JSON object: not Google Benchmark output");
  auto list = doc.find("benchmarks");
  if (list == doc.end() || !list->is_array())
    return invalid(file, "benchmarks", "missing or not an array: not Google Benchmark output");
  BenchRun run;
  run.file = file;
  if (auto ctx = doc.find("context"); ctx != doc.end() && ctx->is_object())
    if (auto host = ctx->find("host_name"); host != ctx->end() && host->is_string())
      run.host = host->get<std::string>();
  std::map<std::string, size_t> index;
  std::map<std::string, std::map<std::string, std::vector<double>>> counterSamples;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& e = (*list)[i];
    std::string at = "benchmarks[" + std::to_string(i) + "]";
    if (!e.is_object()) return invalid(file, at, "expected object");
    auto name = e.find("name");
    if (name == e.end() || !name->is_string() || name->get<std::string>().empty())
      return invalid(file, at + ".name", "missing, empty or not a string");
    std::string key = name->get<std::string>();
    if (auto rn = e.find("run_name"); rn != e.end()) {
      if (!rn->is_string() || rn->get<std::string>().empty())
        return invalid(file, at + ".run_name", "not a non-empty string");
      key = rn->get<std::string>();
    }
    if (auto rt = e.find("run_type"); rt != e.end()) {
      if (!rt->is_string()) return invalid(file, at + ".run_type", "not a string");
      if (rt->get<std::string>() == "aggregate") continue;  // recomputed from the samples
      if (rt->get<std::string>() != "iteration")
        return invalid(file, at + ".run_type",
                       "'" + echo(rt->get<std::string>()) + "' is neither iteration nor aggregate");
    }
    auto [it, fresh] = index.emplace(key, run.benchmarks.size());
    if (fresh) run.benchmarks.push_back(Benchmark{key, {}, {}, false, {}});
    Benchmark& b = run.benchmarks[it->second];
    if (auto err = e.find("error_occurred"); err != e.end()) {
      if (!err->is_boolean()) return invalid(file, at + ".error_occurred", "not a boolean");
      if (err->get<bool>()) {
        b.errored = true;
        auto msg = e.find("error_message");
        b.error = msg != e.end() && msg->is_string() ? echo(msg->get<std::string>(), 200) : "";
        continue;
      }
    }
    double scale = 1;
    if (auto unit = e.find("time_unit"); unit != e.end()) {
      if (!unit->is_string()) return invalid(file, at + ".time_unit", "not a string");
      auto s = unitScale(unit->get<std::string>());
      if (!s)
        return invalid(file, at + ".time_unit",
                       "unknown unit '" + echo(unit->get<std::string>()) + "'");
      scale = *s;
    }
    auto real = e.find("real_time");
    if (real == e.end() || !real->is_number() || !std::isfinite(real->get<double>()) ||
        real->get<double>() < 0)
      return invalid(file, at + ".real_time", "missing or not a finite non-negative number");
    b.samples.push_back(real->get<double>() * scale);
    for (auto f = e.begin(); f != e.end(); ++f)
      if (f->is_number() && !ownKeys().count(f.key()) && std::isfinite(f->get<double>()))
        counterSamples[key][f.key()].push_back(f->get<double>());
  }
  for (Benchmark& b : run.benchmarks)
    for (auto& [counter, values] : counterSamples[b.name]) b.counters[counter] = medianOf(values);
  return run;
}

Expected<BenchRun> readBenchJson(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxBenchBytes, "benchmark file"));
  return parseBenchJson(text, path);
}

double Thresholds::forBenchmark(const std::string& name) const {
  auto it = slowdown.find(name);
  return it == slowdown.end() ? defaultSlowdown : it->second;
}

Expected<Thresholds> parseThresholds(const std::string& text, const std::string& file) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return invalid(file, "", "not a JSON object (a corrupt thresholds file)");
  auto magic = doc.find("magic");
  if (magic == doc.end() || !magic->is_string() || magic->get<std::string>() != kThresholdsMagic)
    return invalid(file, "magic", std::string("not ") + kThresholdsMagic + ": a foreign file");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_unsigned() ||
      version->get<uint64_t>() != uint64_t(kThresholdsVersion))
    return invalid(file, "version", "not version " + std::to_string(kThresholdsVersion));
  Thresholds t;
  auto fraction = [&](const Json& v, const std::string& path, double max) -> Expected<double> {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
        v.get<double>() > max)
      return invalid(file, path, "not a number in [0, " + fmt(max, "%g") + "]");
    return v.get<double>();
  };
  if (auto a = doc.find("alpha"); a != doc.end()) {
    QGPU_TRY(alpha, fraction(*a, "alpha", 1));
    if (alpha <= 0) return invalid(file, "alpha", "must be over 0");
    t.alpha = alpha;
  }
  if (auto d = doc.find("defaultSlowdown"); d != doc.end()) {
    QGPU_TRY(slow, fraction(*d, "defaultSlowdown", 10));
    t.defaultSlowdown = slow;
  }
  if (auto per = doc.find("slowdown"); per != doc.end()) {
    if (!per->is_object()) return invalid(file, "slowdown", "not an object (name -> fraction)");
    for (auto f = per->begin(); f != per->end(); ++f) {
      QGPU_TRY(slow, fraction(*f, "slowdown." + f.key(), 10));
      t.slowdown[f.key()] = slow;
    }
  }
  return t;
}

Expected<Thresholds> readThresholds(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxBenchBytes, "thresholds file"));
  return parseThresholds(text, path);
}

double mannWhitneyP(std::span<const double> a, std::span<const double> b) {
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return 1;
  // Ranks of the pooled sample, ties sharing their average rank.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.push_back({x, 0});
  for (double x : b) pooled.push_back({x, 1});
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  double rankSumA = 0, tieTerm = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    double rank = (double(i + 1) + double(j)) / 2;  // ranks i+1 .. j
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rankSumA += rank;
    double t = double(j - i);
    if (j - i > 1) ties = true;
    tieTerm += t * t * t - t;
    i = j;
  }
  const double u1 = rankSumA - double(n1) * double(n1 + 1) / 2;
  const double u2 = double(n1) * double(n2) - u1;
  if (!ties && std::min(n1, n2) <= 8) {
    // Exact: count the arrangements with U <= min(U1, U2). ways[i][j][u]: arrangements of i
    // values of `a` and j of `b` with U = u (the largest value is from a: +j, or from b: +0).
    const size_t maxU = n1 * n2;
    std::vector<std::vector<std::vector<double>>> ways(
        n1 + 1, std::vector<std::vector<double>>(n2 + 1, std::vector<double>(maxU + 1, 0)));
    for (size_t i = 0; i <= n1; ++i)
      for (size_t j = 0; j <= n2; ++j) {
        if (i == 0 || j == 0) {
          ways[i][j][0] = 1;
          continue;
        }
        for (size_t u = 0; u <= maxU; ++u)
          ways[i][j][u] = (u >= j ? ways[i - 1][j][u - j] : 0) + ways[i][j - 1][u];
      }
    double total = 0, tail = 0;
    const double umin = std::min(u1, u2);
    for (size_t u = 0; u <= maxU; ++u) {
      total += ways[n1][n2][u];
      if (double(u) <= umin + 1e-9) tail += ways[n1][n2][u];
    }
    return std::min(1.0, 2 * tail / total);
  }
  const double mu = double(n1) * double(n2) / 2;
  const double var =
      double(n1) * double(n2) / 12 * (double(n + 1) - tieTerm / (double(n) * double(n - 1)));
  if (var <= 0) return 1;
  const double z = (std::max(u1, u2) - mu - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

const char* changeName(Change c) {
  switch (c) {
    case Change::NoBaseline:
      return "no-baseline";
    case Change::Missing:
      return "missing";
    case Change::Errored:
      return "errored";
    case Change::TooFewRepetitions:
      return "too-few-repetitions";
    case Change::Same:
      return "same";
    case Change::Faster:
      return "faster";
    case Change::WithinNoise:
      return "within-noise";
    case Change::Regression:
      return "REGRESSION";
  }
  return "?";
}

std::span<const Anchor> anchors() {
  return kAnchors;
}

bool Comparison::regressed() const {
  return std::any_of(rows.begin(), rows.end(),
                     [](const Row& r) { return r.change == Change::Regression; });
}

Comparison compare(const BenchRun& run, const BenchRun* baseline, const Thresholds& thresholds) {
  Comparison c;
  c.gated = baseline != nullptr;
  c.alpha = thresholds.alpha;
  for (const Benchmark& b : run.benchmarks) {
    Row r;
    r.name = b.name;
    r.median = b.median();
    r.cv = b.cv();
    r.repetitions = b.samples.size();
    r.threshold = thresholds.forBenchmark(b.name);
    for (const Anchor& a : kAnchors)
      if (b.name.rfind(a.benchmarkPrefix, 0) == 0)
        if (auto it = b.counters.find(a.counter); it != b.counters.end())
          r.anchors.push_back({a.what, a.counter, it->second, a.perSecond});
    const Benchmark* base = baseline ? baseline->find(b.name) : nullptr;
    if (base) {
      r.baseMedian = base->median();
      r.baseRepetitions = base->samples.size();
      r.relative = *r.baseMedian > 0 ? (r.median - *r.baseMedian) / *r.baseMedian : 0;
    }
    if (b.errored) {
      r.change = Change::Errored;
    } else if (!base) {
      r.change = Change::NoBaseline;
    } else if (b.samples.size() < kMinRepetitions || base->samples.size() < kMinRepetitions) {
      r.change = Change::TooFewRepetitions;
    } else {
      r.p = mannWhitneyP(b.samples, base->samples);
      bool significant = *r.p < thresholds.alpha;
      if (r.relative > r.threshold)
        r.change = significant ? Change::Regression : Change::WithinNoise;
      else if (r.relative < -r.threshold && significant)
        r.change = Change::Faster;
      else
        r.change = Change::Same;
    }
    c.rows.push_back(std::move(r));
  }
  if (baseline)
    for (const Benchmark& b : baseline->benchmarks)
      if (!run.find(b.name)) {
        Row r;
        r.name = b.name;
        r.change = Change::Missing;
        r.baseMedian = b.median();
        r.baseRepetitions = b.samples.size();
        c.rows.push_back(std::move(r));
      }
  return c;
}

std::string formatComparison(const Comparison& c) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %12s %7s %4s %12s %8s %8s  %s\n", "benchmark", "median",
                "cv", "reps", "baseline", "change", "p", "verdict");
  out += line;
  for (const Row& r : c.rows) {
    std::string base = r.baseMedian ? fmtTime(*r.baseMedian) : "-";
    std::string change =
        r.baseMedian && r.change != Change::Missing ? fmt(100 * r.relative, "%+.1f%%") : "-";
    std::string p = r.p ? fmt(*r.p, "%.4f") : "-";
    std::string median = r.change == Change::Missing ? "-" : fmtTime(r.median);
    std::snprintf(line, sizeof line, "%-44s %12s %6.1f%% %4zu %12s %8s %8s  %s\n",
                  echo(r.name, 44).c_str(), median.c_str(), 100 * r.cv, r.repetitions, base.c_str(),
                  change.c_str(), p.c_str(), changeName(r.change));
    out += line;
  }
  bool anyAnchor = false;
  for (const Row& r : c.rows)
    for (const AnchorComparison& a : r.anchors) {
      if (!anyAnchor) out += "\nanchors (../shared/MISSION.md):\n";
      anyAnchor = true;
      std::snprintf(line, sizeof line, "  %-36s %-12s %12.4g/s  vs %-40s %10.3gx\n",
                    echo(r.name, 36).c_str(), a.counter.c_str(), a.value, a.anchor.c_str(),
                    a.ratio());
      out += line;
    }
  if (c.gated) {
    size_t regressions = 0;
    for (const Row& r : c.rows) regressions += r.change == Change::Regression;
    out += "\ngate: " + std::to_string(regressions) +
           " regression(s) beyond threshold and noise (Mann-Whitney U, p < " + fmt(c.alpha, "%g") +
           ")\n";
  }
  return out;
}

nlohmann::json toJson(const Comparison& c) {
  Json rows = Json::array();
  for (const Row& r : c.rows) {
    Json j = {{"name", r.name},
              {"change", changeName(r.change)},
              {"medianNs", r.median},
              {"cv", r.cv},
              {"repetitions", r.repetitions},
              {"baselineMedianNs", r.baseMedian ? Json(*r.baseMedian) : Json(nullptr)},
              {"baselineRepetitions", r.baseRepetitions},
              {"relative", r.relative},
              {"threshold", r.threshold},
              {"p", r.p ? Json(*r.p) : Json(nullptr)}};
    Json anchorsJson = Json::array();
    for (const AnchorComparison& a : r.anchors)
      anchorsJson.push_back({{"anchor", a.anchor},
                             {"counter", a.counter},
                             {"value", a.value},
                             {"anchorValue", a.anchorValue},
                             {"ratio", a.ratio()}});
    j["anchors"] = anchorsJson;
    rows.push_back(std::move(j));
  }
  return {
      {"gated", c.gated}, {"alpha", c.alpha}, {"regressed", c.regressed()}, {"benchmarks", rows}};
}

std::string htmlSection(const Comparison& c) {
  using report::escapeMarkup;
  using report::MarkupContext;
  auto esc = [](const std::string& s) { return escapeMarkup(s, MarkupContext::Content); };
  auto attr = [](const std::string& s) { return escapeMarkup(s, MarkupContext::Attribute); };
  std::string o =
      "<h2>Benchmarks</h2>\n<table id=\"bench\"><tr><th>benchmark</th><th>median</th>"
      "<th>cv</th><th>reps</th><th>baseline</th><th>change</th><th>p</th><th>verdict</th></tr>\n";
  std::vector<std::string> names;
  std::vector<std::vector<double>> ratio, cv;
  for (const Row& r : c.rows) {
    o += "<tr data-bench=\"" + attr(r.name) + "\" data-change=\"" + changeName(r.change) +
         "\"><td class=\"k\">" + esc(r.name) + "</td><td>" +
         (r.change == Change::Missing ? "-" : fmtTime(r.median)) + "</td><td>" +
         fmt(100 * r.cv, "%.1f%%") + "</td><td>" + std::to_string(r.repetitions) + "</td><td>" +
         (r.baseMedian ? fmtTime(*r.baseMedian) : "-") + "</td><td>" +
         (r.baseMedian && r.change != Change::Missing ? fmt(100 * r.relative, "%+.1f%%") : "-") +
         "</td><td>" + (r.p ? fmt(*r.p, "%.4f") : "-") + "</td><td class=\"" +
         (r.change == Change::Regression ? "mismatch"
          : r.change == Change::Same     ? "match"
                                         : "inconclusive") +
         "\">" + changeName(r.change) + "</td></tr>\n";
    if (r.change == Change::Missing) continue;
    names.push_back(r.name);
    ratio.push_back({r.baseMedian && *r.baseMedian > 0 ? r.median / *r.baseMedian : 0});
    cv.push_back({100 * r.cv});
  }
  o += "</table>\n";
  bool anyAnchor = false;
  for (const Row& r : c.rows)
    for (const AnchorComparison& a : r.anchors) {
      if (!anyAnchor)
        o += "<h3>Anchors (MISSION.md)</h3>\n<table id=\"anchors\"><tr><th>benchmark</th>"
             "<th>counter</th><th>per second</th><th>anchor</th><th>ratio</th></tr>\n";
      anyAnchor = true;
      o += "<tr><td class=\"k\">" + esc(r.name) + "</td><td>" + esc(a.counter) + "</td><td>" +
           fmt(a.value, "%.4g") + "</td><td class=\"k\">" + esc(a.anchor) + "</td><td>" +
           fmt(a.ratio(), "%.3g") + "x</td></tr>\n";
    }
  if (anyAnchor) o += "</table>\n";
  if (c.gated)
    o += report::htmlBarPlot("median time, this run / baseline (1 = unchanged)", names,
                             {"this run / baseline"}, ratio, "x");
  o += report::htmlBarPlot("run-to-run noise (cv of the repetitions)", names, {"cv"}, cv, "%");
  return o;
}

}  // namespace qgpu::bench
