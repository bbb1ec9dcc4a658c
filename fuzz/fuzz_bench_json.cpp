// qgpu/fuzz/fuzz_bench_json.cpp — libFuzzer target for the Google Benchmark JSON reader and the
// thresholds reader (harness/bench_report.h), the inputs of `qgpu bench report`.
//
// Feeds arbitrary text to parseBenchJson and parseThresholds. Neither may crash, hang or trip a
// sanitizer, and both refuse only with ReportInvalid. A run it accepts is compared with itself
// as the baseline: no benchmark may then be a regression (every median equals its baseline's),
// and the table, the JSON and the HTML section must be produced without failing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/bench_report.h"

using namespace qgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto t = bench::parseThresholds(text, "fuzz.json");
  if (!t && t.error().kind != ErrorKind::ReportInvalid) __builtin_trap();
  auto r = bench::parseBenchJson(text, "fuzz.json");
  if (!r) {
    if (r.error().kind != ErrorKind::ReportInvalid) __builtin_trap();
    return 0;
  }
  bench::Comparison c = bench::compare(*r, &*r, bench::Thresholds{});
  if (c.regressed()) __builtin_trap();
  (void)bench::formatComparison(c);
  (void)bench::toJson(c).dump();
  (void)bench::htmlSection(c);
  return 0;
}
