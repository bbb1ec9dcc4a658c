// qgpu/gpu/record.h — turning GPU runs into a recording and a verdict table; shared by
// `qgpu gpu record` (harness/cli/cmd_gpu.cpp) and the standalone `qgpu-gpu-record` tool.
//
// Contract: `recordCase` never fails: a driver error or a finding becomes the case's status and
// detail (recording.h), so one bad kernel cannot hide the others. NoDevice is the caller's
// business: it happens at Runner::open(), before any case runs. Verdicts, their tally and its exit
// code are common/outcome.h's (qgpu::Tally, qgpu::exitCode), the same for every leg.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpu/inputs.h"
#include "gpu/recording.h"
#include "gpu/runner.h"

namespace qgpu::gpu {

// Runs one kernel (twice, with guards: Runner::run) and records the outcome.
RecordedCase recordCase(Runner& runner, const std::string& kernel, const std::string& compiler,
                        const GpuLaunch& launch);

// GPU, driver and build facts for the recording header; `commit` is the exporting tree's commit.
Provenance collectProvenance(const DeviceInfo& device, const std::string& commit,
                             const std::string& tool);

// The current UTC time as ISO-8601 ("2026-11-30T01:02:03Z").
std::string utcNow();

// "12 match, 0 mismatch, 1 inconclusive (1 stale), 0 harness-error (of 13)"; `stale` counts the
// inconclusive cases whose recording is stale.
std::string summary(const Tally& tally, int stale);

// One table row: "match        dot/clang" or "mismatch     dot/nvcc: word 5 ...".
std::string verdictLine(const std::string& kernel, const std::string& compiler,
                        const CaseComparison& c);

// ---- A whole recording against what the host produces now ----
struct RecordingRow {
  std::string kernel;
  std::string compiler;
  CaseComparison comparison;
};

struct RecordingReport {
  std::vector<RecordingRow> rows;       // one per recorded case, in recording order
  Tally tally;
  int stale = 0;                         // inconclusive rows that are stale (CaseComparison::stale)
  std::vector<std::string> notRecorded;  // "kernel/compiler" of current cases with no recording
};

// The interpreter leg for one case (pipeline.h: parse, lower, interpret the case's PTX).
using InterpretFn = std::function<Expected<std::vector<uint32_t>>(const GpuCase&)>;

// For each recorded case, `current` (the host's PTX and launch now: exported inputs or a fresh
// compile) must hold the same (kernel, compiler). No such case, or a different PTX digest, is
// Stale; otherwise the case's PTX is interpreted and compared with the recorded image.
RecordingReport compareRecording(const Recording& recording, const Inputs& current,
                                 const InterpretFn& interpret);

}  // namespace qgpu::gpu
