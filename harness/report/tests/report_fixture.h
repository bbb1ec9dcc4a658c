// qgpu/harness/report/tests/report_fixture.h — hand-made run reports for the report tests: one
// case of every verdict, so that every branch of every writer and reader has something to show.
#pragma once

#include "harness/report/json_report.h"

namespace qgpu::report::testing {

inline harness::CaseResult fakeCase(const std::string& kernel, const std::string& compiler,
                                    harness::Backend backend, Verdict verdict,
                                    const std::string& detail = "") {
  harness::CaseResult c;
  c.kernel = kernel;
  c.compiler = compiler;
  c.backend = backend;
  c.verdict = verdict;
  c.detail = detail;
  c.ptxDigest = "fnv1a64:00000000000000a1";
  c.traceDigest = "fnv1a64:00000000000000b2";
  c.programDigest = "fnv1a64:00000000000000c3";
  c.inputDigest = "fnv1a64:00000000000000d4";
  c.traceTokens = 10 + kernel.size();
  c.steps = 3;
  c.laneInstrs = 12;
  c.machineBlocks = 2;
  c.gridX = 1;
  c.blockX = 4;
  c.wallSeconds = 0.25;
  c.cpuSeconds = 0.125;
  if (verdict == Verdict::Inconclusive) c.error = ErrorKind::NoDevice;
  if (verdict == Verdict::HarnessError) c.error = ErrorKind::ProgramInvalid;
  return c;
}

// Four kernels, clang only, interp + gpu: alpha matches everywhere, beta mismatches on interp,
// gamma is a harness error on interp, every gpu case is inconclusive (no device).
inline Plan fakePlan() {
  Plan p;
  p.catalogDigest = "fnv1a64:0123456789abcdef";
  p.catalogKernels = 9;
  p.kernels = {"alpha", "beta", "gamma", "delta"};
  p.compilers = {"clang"};
  p.gpu = true;
  p.maxSteps = 1000;
  return p;
}

// The cases of the plan's kernels `jobs`, as one shard `shard` would report them.
inline RunReport fakeReport(std::vector<size_t> jobs, ShardSpec shard = {}) {
  RunReport r;
  r.plan = fakePlan();
  r.shard = shard;
  r.provenance.commit = "e3f4b3743b8142e5f457e1c7c30cf3101f9d40cc";
  r.provenance.dirty = "false";
  r.provenance.host = "host" + std::to_string(shard.index);
  r.provenance.tools["clang"] = "Debian clang version 14.0.6";
  r.gpuDevice = "no device: no CUDA driver";
  r.startedAt = "2026-12-01T09:00:0" + std::to_string(shard.index) + "Z";
  r.finishedAt = "2026-12-01T09:10:00Z";
  r.wallSeconds = 1.5 + shard.index;
  for (size_t job : jobs) {
    const std::string& k = r.plan.kernels[job];
    Verdict v = k == "beta" ? Verdict::Mismatch : k == "gamma" ? Verdict::HarnessError : Verdict::Match;
    std::string detail = k == "beta" ? "out[3]: got 7, expected 9" : k == "gamma" ? "block 2 <bad>" : "";
    r.cases.push_back({job, fakeCase(k, "clang", harness::Backend::Interp, v, detail)});
    r.cases.push_back({job, fakeCase(k, "clang", harness::Backend::Gpu, Verdict::Inconclusive,
                                     "no device: no CUDA driver")});
  }
  r.jobs = std::move(jobs);
  return r;
}

}  // namespace qgpu::report::testing
