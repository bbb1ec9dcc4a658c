// qgpu/gpu/tool/record_main.cpp — `qgpu-gpu-record`: runs the exported GPU inputs on a real GPU,
// writes the recording and compares it with the interpreter results exported alongside.
//
// Only common/, gpu/ and the header-only nlohmann-json on purpose: it is what ci/gpu-record.sh
// builds on a GPU machine that has none of our Debian libraries (the headers are carried there:
// ci/gpu-prepare.sh, docs/gpu.md).
//
// Usage: qgpu-gpu-record --inputs DIR --out FILE [--tool-name NAME]
// Exit codes (those of harness/cli/command.h):
//   0 every case ran and agreed with the interpreter   1 at least one mismatch
//   2 usage error or unreadable/invalid inputs          3 harness error (writing, self-check)
//   4 inconclusive: no GPU/driver, or some case could not be compared (driver error)
#include <cstdio>
#include <cstring>
#include <string>

#include "gpu/inputs.h"
#include "gpu/record.h"
#include "gpu/recording.h"
#include "gpu/runner.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "qgpu-gpu-record: %s\n"
               "usage: qgpu-gpu-record --inputs DIR --out FILE\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qgpu;
  using namespace qgpu::gpu;
  std::string inputsDir, outPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--inputs" && i + 1 < argc) {
      inputsDir = argv[++i];
    } else if (a == "--out" && i + 1 < argc) {
      outPath = argv[++i];
    } else if (a == "--help" || a == "-h") {
      usage("runs reports/gpu/inputs on the GPU and writes the recording");
      return 0;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (inputsDir.empty() || outPath.empty()) return usage("--inputs and --out are required");

  auto inputs = readInputs(inputsDir);
  if (!inputs.ok()) {
    std::fprintf(stderr, "%s\n", inputs.error().str().c_str());
    return 2;
  }
  if (inputs->cases.empty()) {
    std::fprintf(stderr, "qgpu-gpu-record: %s has no cases\n", inputsDir.c_str());
    return 2;
  }
  auto runner = Runner::open();
  if (!runner.ok()) {
    const Diag& d = runner.error();
    std::fprintf(stderr, "%s: %s\n", outcomeName(classify(d)), d.str().c_str());
    return exitCode(d);
  }
  const DeviceInfo& dev = runner->device();
  std::printf("device: %s, compute capability %d.%d, CUDA driver API %d, %s\n", dev.name.c_str(),
              dev.ccMajor, dev.ccMinor, dev.driverVersion, dev.libraryPath.c_str());

  Recording rec;
  rec.provenance = collectProvenance(dev, inputs->commit, "qgpu-gpu-record");
  Tally tally;
  int stale = 0;
  for (const GpuCase& c : inputs->cases) {
    RecordedCase rc = recordCase(*runner, c.kernel, c.compiler, c.launch);
    CaseComparison cmp = compareCase(rc, c.digest, c.expectation(), c.launch.unordered);
    tally.add(cmp.verdict);
    stale += cmp.stale;
    std::printf("%s\n", verdictLine(c.kernel, c.compiler, cmp).c_str());
    rec.cases.push_back(std::move(rc));
  }
  auto wrote = writeRecording(rec, outPath);
  if (!wrote.ok()) {
    std::fprintf(stderr, "%s\n", wrote.error().str().c_str());
    return 3;
  }
  // Self-check: the file must pass the same validation every reader applies.
  auto back = readRecording(outPath);
  if (!back.ok() || back->cases.size() != rec.cases.size()) {
    std::fprintf(stderr, "harness error: the written recording does not validate: %s\n",
                 back.ok() ? "case count differs" : back.error().str().c_str());
    return 3;
  }
  std::printf("GPU vs interpreter (exported at commit %s) on %s: %s\nwrote %s\n",
              inputs->commit.c_str(), dev.name.c_str(), summary(tally, stale).c_str(), outPath.c_str());
  return exitCode(tally);
}
