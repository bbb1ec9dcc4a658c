// qgpu/harness/tests/gpu_recorded_test.cpp — the interpreter against results recorded on a real
// GPU.
//
// Reads reports/gpu/recording.json and reports/gpu/inputs/ (the PTX and launch the host produced
// when the inputs were exported; gpu_inputs_fresh_test keeps them equal to what the compilers
// produce now). Every recorded case whose PTX digest still matches is interpreted with today's
// parser, lowering and interpreter and compared word by word; stale cases are listed apart and do
// not fail the test. No recording: skipped with the reason, never passed.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "gpu/inputs.h"
#include "gpu/record.h"
#include "gpu/recording.h"
#include "harness/gpu_cases.h"

namespace qgpu::gpu {
namespace {

using harness::interpretCase;

const std::string kDir = std::string(QGPU_SOURCE_DIR) + "/reports/gpu";

TEST(GpuRecorded, InterpreterAgreesWithTheRecordedGpuResults) {
  const std::string path = kDir + "/recording.json";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "no GPU recording committed at " << path
                 << ": run ci/gpu-record.sh on a machine with an NVIDIA GPU (docs/gpu.md)";
  }
  auto rec = readRecording(path);
  ASSERT_TRUE(rec.ok()) << rec.error().str();
  auto inputs = readInputs(kDir + "/inputs");
  ASSERT_TRUE(inputs.ok()) << inputs.error().str();

  RecordingReport report = compareRecording(*rec, *inputs, interpretCase);
  const Provenance& p = rec->provenance;
  std::cout << "recording: " << p.gpu << " (cc " << p.computeCapability << ", driver "
            << p.driverVersion << ", CUDA " << p.cudaDriverApiVersion << ") on " << p.date
            << ", inputs at commit " << p.commit << "\n";
  for (const RecordingRow& r : report.rows) {
    std::cout << verdictLine(r.kernel, r.compiler, r.comparison) << "\n";
    EXPECT_TRUE(r.comparison.verdict == Verdict::Match ||
                r.comparison.verdict == Verdict::Inconclusive)
        << r.kernel << "/" << r.compiler << ": " << r.comparison.detail;
  }
  for (const std::string& n : report.notRecorded) std::cout << "not recorded " << n << "\n";
  std::cout << "GPU vs interpreter: " << summary(report.tally, report.stale) << "\n";
  RecordProperty("match", report.tally[Verdict::Match]);
  RecordProperty("stale", report.stale);
  if (report.tally[Verdict::Match] == 0 && report.tally[Verdict::Mismatch] == 0) {
    GTEST_SKIP() << "nothing compared: every recorded case is stale or inconclusive ("
                 << summary(report.tally, report.stale) << "); re-record with ci/gpu-record.sh";
  }
}

}  // namespace
}  // namespace qgpu::gpu
