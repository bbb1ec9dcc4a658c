// qgpu/gpu/record.cpp — recording cases, provenance, verdict tally (see record.h).
#include "gpu/record.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#if defined(QGPU_HAVE_CUDA_H)
#include <cuda.h>
#endif

namespace qgpu::gpu {

namespace {

// "13000" -> "13.0"; the driver API encodes versions as 1000*major + 10*minor.
std::string cudaVersionString(int v) {
  if (v <= 0) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The NVIDIA kernel module's version ("550.54.15"); the driver API does not expose it.
std::string kernelDriverVersion() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "unknown";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..."
  std::istringstream words(line);
  std::string w, prev, prev2;
  while (words >> w) {
    if (prev2 == "Kernel" && prev == "Module") return w;
    prev2 = prev;
    prev = w;
  }
  return line;
}

}  // namespace

RecordedCase recordCase(Runner& runner, const std::string& kernel, const std::string& compiler,
                        const GpuLaunch& launch) {
  RecordedCase rc;
  rc.kernel = kernel;
  rc.compiler = compiler;
  rc.entry = launch.entry;
  rc.ptxDigest = ptxDigest(launch.ptx);
  rc.grid = launch.gridX;
  rc.block = launch.blockX;
  auto result = runner.run(launch);
  if (!result.ok()) {
    const Diag& d = result.error();
    rc.status = CaseStatus::DeviceError;
    rc.detail = std::string(kindName(d.kind)) + ": " + d.message;
    return rc;
  }
  if (!result->deterministic) {  // a finding; the recording keeps no image for it
    rc.status = CaseStatus::Nondeterministic;
    rc.detail = "nondeterministic result: " + result->nondeterminismReport;
    return rc;
  }
  rc.global = result->global;
  if (!result->guardsIntact) {
    rc.status = CaseStatus::GuardViolation;
    rc.detail = result->guardReport;
  }
  return rc;
}

std::string utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Provenance collectProvenance(const DeviceInfo& device, const std::string& commit,
                             const std::string& tool) {
  Provenance p;
  p.gpu = device.name;
  p.computeCapability = std::to_string(device.ccMajor) + "." + std::to_string(device.ccMinor);
  p.driverVersion = kernelDriverVersion();
  p.cudaDriverApiVersion = cudaVersionString(device.driverVersion);
#if defined(QGPU_HAVE_CUDA_H) && defined(CUDA_VERSION)
  p.cudaToolkitVersion = cudaVersionString(CUDA_VERSION);
#else
  p.cudaToolkitVersion = "unknown";
#endif
  p.date = utcNow();
  p.commit = commit.empty() ? "unknown" : commit;
  char host[256] = {};
  p.host = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  p.tool = tool;
  return p;
}

std::string summary(const Tally& t, int stale) {
  return std::to_string(t[Verdict::Match]) + " match, " + std::to_string(t[Verdict::Mismatch]) +
         " mismatch, " + std::to_string(t[Verdict::Inconclusive]) + " inconclusive (" +
         std::to_string(stale) + " stale), " + std::to_string(t[Verdict::HarnessError]) +
         " harness-error (of " + std::to_string(t.total()) + ")";
}

std::string verdictLine(const std::string& kernel, const std::string& compiler,
                        const CaseComparison& c) {
  std::string name = c.stale ? "stale" : verdictName(c.verdict);
  name.resize(13, ' ');
  std::string line = name + kernel + "/" + compiler;
  if (!c.detail.empty()) line += ": " + c.detail;
  return line;
}

RecordingReport compareRecording(const Recording& recording, const Inputs& current,
                                 const InterpretFn& interpret) {
  RecordingReport report;
  std::vector<bool> used(current.cases.size(), false);
  for (const RecordedCase& rc : recording.cases) {
    const GpuCase* now = nullptr;
    for (size_t i = 0; i < current.cases.size(); ++i) {
      if (current.cases[i].kernel == rc.kernel && current.cases[i].compiler == rc.compiler) {
        now = &current.cases[i];
        used[i] = true;
      }
    }
    CaseComparison cmp;
    if (now == nullptr) {
      cmp = {Verdict::Inconclusive, true, "stale: the host no longer has this kernel/compiler"};
    } else if (now->digest != rc.ptxDigest) {
      cmp = compareCase(rc, now->digest, std::vector<uint32_t>{});  // Stale, names both digests
    } else {
      cmp = compareCase(rc, now->digest, interpret(*now), now->launch.unordered);
    }
    report.tally.add(cmp.verdict);
    report.stale += cmp.stale;
    report.rows.push_back({rc.kernel, rc.compiler, std::move(cmp)});
  }
  for (size_t i = 0; i < current.cases.size(); ++i) {
    if (!used[i]) report.notRecorded.push_back(current.cases[i].kernel + "/" + current.cases[i].compiler);
  }
  return report;
}

}  // namespace qgpu::gpu
