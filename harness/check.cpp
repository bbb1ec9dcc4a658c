// qgpu/harness/check.cpp — catalog conformance runs.
#include "harness/check.h"

#include <time.h>

#include <algorithm>
#include <cassert>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/digest.h"
#include "gpu/runner.h"
#include "harness/gpu_cases.h"

namespace qgpu::harness {

struct GpuSession::Impl {
  std::optional<gpu::Runner> runner;
};

GpuSession::GpuSession() : impl_(std::make_unique<Impl>()) {
  auto opened = gpu::Runner::open();
  if (!opened.ok()) {
    description_ = "no device: " + opened.error().message;
    return;
  }
  impl_->runner.emplace(std::move(opened).value());
  const gpu::DeviceInfo& d = impl_->runner->device();
  description_ = d.name + " (sm_" + std::to_string(d.ccMajor) + std::to_string(d.ccMinor) +
                 ", driver " + std::to_string(d.driverVersion) + ")";
}

GpuSession::~GpuSession() = default;

bool GpuSession::available() const { return impl_->runner.has_value(); }
std::string GpuSession::deviceName() const {
  return impl_->runner ? impl_->runner->device().name : std::string();
}
int GpuSession::driverVersion() const {
  return impl_->runner ? impl_->runner->device().driverVersion : 0;
}

namespace {

// Wall and thread-CPU seconds since construction, into a case (the manifest's per-case times).
// The thread's CPU clock: a compiler subprocess's time is not ours to count.
class Stopwatch {
 public:
  Stopwatch() : wall0_(std::chrono::steady_clock::now()) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0_);
  }
  void stop(CaseResult& r) const {
    timespec cpu1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    r.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    r.cpuSeconds = double(cpu1.tv_sec - cpu0_.tv_sec) + 1e-9 * double(cpu1.tv_nsec - cpu0_.tv_nsec);
  }

 private:
  std::chrono::steady_clock::time_point wall0_;
  timespec cpu0_{};
};

// The evidence a manifest records of what was built: program and input digests, the launch.
void recordBuild(CaseResult& r, const BuiltKernel& kernel) {
  r.programDigest = programDigest(kernel.program);
  r.inputDigest = inputDigest(kernel.image.global, kernel.image.params);
  r.gridX = kernel.image.gridX;
  r.blockX = kernel.image.blockX;
}

}  // namespace

std::string programDigest(const machine::Program& program) {
  return digestString(fnv1a64(machine::print(program)));
}

std::string inputDigest(std::span<const uint32_t> global, std::span<const uint32_t> params) {
  uint64_t h = kFnvOffset;
  for (std::span<const uint32_t> words : {global, params})
    h = fnv1a64(std::string_view(reinterpret_cast<const char*>(words.data()), words.size_bytes()), h);
  return digestString(h);
}

CaseResult GpuSession::compare(const kernels::KernelSpec& spec, const InterpCase& interp) {
  gpu::Runner* runner = impl_->runner ? &*impl_->runner : nullptr;
  CaseResult r;
  r.kernel = spec.name;
  r.compiler = interp.result.compiler;
  r.backend = Backend::Gpu;
  r.ptxDigest = interp.result.ptxDigest;
  if (!runner) {
    r.verdict = Verdict::Inconclusive;  // whatever kept the device from opening: nothing ran
    r.error = ErrorKind::NoDevice;
    r.detail = description_;
    return r;
  }
  if (!interp.run.ok() || interp.run->status != oracle::RunStatus::Finished) {
    r.verdict = Verdict::Inconclusive;
    r.detail = "no interpreter result to compare with";
    return r;
  }
  // A kernel whose shuffles or masks assume 32-lane warps runs as 4-lane code on the machine: the
  // GPU runs a different program, so the two cannot agree (docs/lowering.md, "32-lane
  // assumptions"). Inconclusive with the reason, not a mismatch.
  if (const auto& lanes = interp.kernel->stats.assumes32Lanes; !lanes.empty()) {
    r.verdict = Verdict::Inconclusive;
    r.detail = "the kernel assumes 32-lane warps: " + lanes.front() +
               (lanes.size() > 1 ? " (and " + std::to_string(lanes.size() - 1) + " more)" : "");
    return r;
  }
  gpu::GpuLaunch launch = gpuLaunch(spec, *interp.kernel);
  auto result = runner->run(launch);
  if (!result.ok()) {
    r.verdict = caseVerdict(result.error());  // a driver failure: as when recorded (outcome.h)
    r.error = result.error().kind;
    r.detail = result.error().str();
    return r;
  }
  if (!result->deterministic) {
    r.verdict = Verdict::Mismatch;
    r.detail = "nondeterministic result on the GPU: " + result->nondeterminismReport;
    return r;
  }
  if (!result->guardsIntact) {
    r.verdict = Verdict::Mismatch;
    r.detail = "out-of-bounds write on the GPU: " + result->guardReport;
    return r;
  }
  // A write outside every array is a finding on the GPU too, whatever the interpreter did.
  auto stray = writesOutsideArrays(interp.kernel->image, launch.global, result->global);
  if (!stray.empty()) {
    r.verdict = Verdict::Mismatch;
    r.detail = "write outside every array on the GPU: " + stray.front() +
               (stray.size() > 1 ? " (and " + std::to_string(stray.size() - 1) + " more)" : "");
    return r;
  }
  std::vector<uint32_t> expected(interp.run->global.begin(), interp.run->global.end());
  auto diff = gpu::firstDifference(result->global, expected, launch.unordered);
  if (!diff) {
    r.verdict = Verdict::Match;
  } else {
    r.verdict = Verdict::Mismatch;
    size_t w = *diff;
    r.detail = "word " + std::to_string(w) + ": gpu " +
               (w < result->global.size() ? std::to_string(result->global[w]) : "-") +
               ", interpreter " + (w < expected.size() ? std::to_string(expected[w]) : "-");
  }
  return r;
}

Tally CheckReport::total() const {
  Tally t;
  for (const CaseResult& c : cases) t.add(c.verdict);
  return t;
}

CheckReport runCheck(const std::vector<kernels::KernelSpec>& catalog, const CheckOptions& options) {
  // Phase 1: build and interpret every (kernel, compiler) in parallel; compiling dominates.
  struct Job {
    size_t kernel;
    host::Compiler compiler;
  };
  std::vector<Job> jobs;
  for (size_t k = 0; k < catalog.size(); ++k)
    for (host::Compiler c : options.compilers) jobs.push_back({k, c});
  std::vector<InterpCase> interp(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex reporting;  // onCase is never called concurrently
  auto finished = [&](const CaseResult& c) {
    if (!options.onCase) return;
    std::lock_guard<std::mutex> lock(reporting);
    options.onCase(c);
  };
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      Stopwatch watch;
      interp[i] = runInterpCase(catalog[jobs[i].kernel], jobs[i].compiler, options.run);
      if (interp[i].kernel.ok()) recordBuild(interp[i].result, *interp[i].kernel);
      watch.stop(interp[i].result);
      finished(interp[i].result);
      if (options.onInterpCase) {
        std::lock_guard<std::mutex> lock(reporting);
        options.onInterpCase(interp[i]);
      }
    }
  };
  int workers = std::max(1, std::min<int>(options.jobs, static_cast<int>(jobs.size())));
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();

  // Phase 2: the GPU, one case at a time on one runner.
  CheckReport report;
  std::vector<std::optional<CaseResult>> gpuCases(jobs.size());
  if (options.gpu) {
    GpuSession gpu;
    report.gpuDevice = gpu.description();
    report.gpuName = gpu.deviceName();
    report.gpuDriverVersion = gpu.driverVersion();
    for (size_t i = 0; i < jobs.size(); ++i) {
      Stopwatch watch;
      CaseResult g = gpu.compare(catalog[jobs[i].kernel], interp[i]);
      watch.stop(g);
      const CaseResult& built = interp[i].result;  // the GPU ran the same program on the same input
      g.programDigest = built.programDigest;
      g.inputDigest = built.inputDigest;
      g.gridX = built.gridX;
      g.blockX = built.blockX;
      finished(g);
      gpuCases[i] = std::move(g);
    }
  }

  // Phase 3: the model legs, `jobs` cases at a time (modelCase may be called concurrently).
  const size_t legs = options.modelLegs.size();
  assert((legs == 0 || options.modelCase) && "CheckOptions::modelLegs without a modelCase");
  std::vector<CaseResult> modelCases(jobs.size() * legs);
  next = 0;
  auto modelWorker = [&] {
    for (size_t n; (n = next.fetch_add(1)) < modelCases.size();) {
      const Job& job = jobs[n / legs];
      Stopwatch watch;
      modelCases[n] = options.modelCase(catalog[job.kernel], job.compiler, options.modelLegs[n % legs]);
      watch.stop(modelCases[n]);
      finished(modelCases[n]);
    }
  };
  threads.clear();
  workers = std::max(1, std::min<int>(options.jobs, static_cast<int>(modelCases.size())));
  for (int t = 0; t < workers && !modelCases.empty(); ++t) threads.emplace_back(modelWorker);
  for (std::thread& t : threads) t.join();

  for (size_t i = 0; i < jobs.size(); ++i) {
    report.cases.push_back(interp[i].result);
    if (gpuCases[i]) report.cases.push_back(std::move(*gpuCases[i]));
    for (size_t l = 0; l < legs; ++l) report.cases.push_back(std::move(modelCases[i * legs + l]));
  }
  for (const CaseResult& c : report.cases) report.tallies[{c.backend, c.compiler}].add(c.verdict);
  return report;
}

std::string formatReport(const CheckReport& report, bool verbose) {
  std::ostringstream out;
  for (const CaseResult& c : report.cases) {
    bool noDeviceSkip = c.backend == Backend::Gpu && c.verdict == Verdict::Inconclusive &&
                        c.error == ErrorKind::NoDevice;
    if (c.verdict == Verdict::Match && !verbose) continue;
    if (noDeviceSkip && !verbose) continue;
    out << verdictName(c.verdict) << "  " << c.kernel << " [" << c.compiler << ", "
        << backendName(c.backend) << "]";
    if (c.verdict == Verdict::Match)
      out << "  " << c.traceTokens << " tokens, " << c.steps << " steps, " << c.machineBlocks
          << " blocks";
    if (!c.detail.empty()) out << ": " << c.detail;
    out << "\n";
  }
  out << "\n" << "backend     compiler  match  mismatch  inconclusive  harness-error\n";
  for (const auto& [key, t] : report.tallies) {
    char line[128];
    std::snprintf(line, sizeof line, "%-11s %-9s %5d %9d %13d %14d\n", backendName(key.first),
                  key.second.c_str(), t[Verdict::Match], t[Verdict::Mismatch],
                  t[Verdict::Inconclusive], t[Verdict::HarnessError]);
    out << line;
  }
  if (!report.gpuDevice.empty()) out << "gpu: " << report.gpuDevice << "\n";
  return out.str();
}

nlohmann::json toJson(const CaseResult& c) {
  nlohmann::json j = {{"kernel", c.kernel},           {"compiler", c.compiler},
          {"backend", backendName(c.backend)}, {"verdict", verdictName(c.verdict)},
          {"detail", c.detail},           {"ptxDigest", c.ptxDigest},
          {"traceDigest", c.traceDigest}, {"traceTokens", c.traceTokens},
          {"steps", c.steps},             {"laneInstrs", c.laneInstrs},
          {"machineBlocks", c.machineBlocks}, {"spillSlots", c.spillSlots}};
  if (c.error) j["errorKind"] = kindName(*c.error);  // the error that decided the verdict
  return j;
}

nlohmann::json toJson(const CheckReport& report) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& c : report.cases) cases.push_back(toJson(c));
  nlohmann::json tallies = nlohmann::json::array();
  for (const auto& [key, t] : report.tallies)
    tallies.push_back({{"backend", backendName(key.first)},
                       {"compiler", key.second},
                       {"match", t[Verdict::Match]},
                       {"mismatch", t[Verdict::Mismatch]},
                       {"inconclusive", t[Verdict::Inconclusive]},
                       {"harnessError", t[Verdict::HarnessError]}});
  return {{"magic", "qgpu-check-report"}, {"version", 1}, {"gpu", report.gpuDevice},
          {"tallies", tallies}, {"cases", cases}};
}

int exitCodeFor(const CheckReport& report) { return exitCode(report.total()); }

}  // namespace qgpu::harness
