// qgpu/fuzz/fuzz_report.cpp — libFuzzer target for the run-report reader (harness/report/
// json_report.h), the input of `qgpu report merge` and `check --balance`.
//
// Feeds arbitrary text to parseReportText. It must never crash, hang or trip a sanitizer, and
// refuse only with ReportInvalid. A report it accepts must survive its own JSON (written, read
// back, written again: the same document), and merging it alone must succeed exactly when it is
// one complete, unsharded run, or fail with ReportInvalid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/report/json_report.h"
#include "harness/report/merge.h"

using namespace qgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = report::parseReportText(text, "fuzz.json");
  if (!r) {
    if (r.error().kind != ErrorKind::ReportInvalid) __builtin_trap();
    return 0;
  }
  nlohmann::json once = report::toJson(*r);
  auto again = report::parseReport(once, "fuzz.json");
  if (!again || report::toJson(*again) != once) __builtin_trap();
  auto merged = report::mergeReports({*r}, {"fuzz.json"});
  if (!merged && merged.error().kind != ErrorKind::ReportInvalid) __builtin_trap();
  bool whole = !r->partial && r->shard.total == 1 && r->jobs.size() == r->plan.kernels.size();
  if (merged.ok() != whole) __builtin_trap();
  return 0;
}
