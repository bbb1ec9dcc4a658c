// qgpu/harness/report/manifest.h — the provenance manifest of a run: proof of what ran, where,
// with what, on which inputs, and what it produced (schema "qgpu-manifest" version 1,
// docs/reports.md).
//
// One document per run or shard: the provenance (commit and dirty flag, host, toolchain, GPU,
// checkpoint), the command line, the plan and shard, the run's times, and per case the program
// digest (the lowered machine program's text), the launch, the input digest (initial global
// memory and parameter values), the trace digest (trace::digest) and length, the seeds (none for
// catalog cases: their inputs are fixed by the kernel files), the verdict and the case's wall and
// CPU times. Written by `qgpu check --manifest FILE`, atomically; `partial` is true until the run
// finished.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/json_report.h"

namespace qgpu::report {

inline constexpr const char* kManifestMagic = "qgpu-manifest";
inline constexpr int kManifestVersion = 1;

// `commandLine`: the exact command that reproduces the run; `cpuSeconds`: the process's CPU
// time (user + system, its threads and waited-for children: the compilers) for the run.
// `tracesDir`: where `check --traces` wrote the trace records, relative to the manifest's
// directory ("" when none were written); then every interpreter case with a trace digest names
// its record as `traceFile` (tracesDir/traceFileName), which `qgpu audit` (harness/audit.h) reads.
nlohmann::json manifestJson(const RunReport& report, const std::string& commandLine,
                            double cpuSeconds, const std::string& tracesDir = "");

// The trace record's file name of a case: "<kernel>.<compiler>.<backend>.trace.json" (catalog
// names are identifiers, so it is a plain file name).
std::string traceFileName(const std::string& kernel, const std::string& compiler,
                          harness::Backend backend);

}  // namespace qgpu::report
