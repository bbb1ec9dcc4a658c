// qgpu/bench/model_bench.cpp — decode speed and memory of the Qwen3.5 runtime (model/decoder.h).
//
// Single-token decode reads every weight once, so its floor is weight bytes / memory bandwidth.
// BM_MemoryBandwidth measures this machine's bandwidth with a large copy; each decode benchmark
// reports tokens/s, its time as a multiple of that floor (`x_floor`, target <= 1.5 for the 2B
// shape), and peak resident memory against the checkpoint size (`peak_over_ckpt`, target <= 1.2).
// The 2B-shaped random checkpoint (BF16 storage, 3.8 GB) is generated on first use into
// $QGPU_BENCH_DIR (default /tmp) and reused; nothing here runs in the tests.
//
// Run one family per process so that peak memory is per model:
//   qgpu_model_bench --benchmark_filter='Bandwidth|Tiny'
//   qgpu_model_bench --benchmark_filter='2B/f32'
//   qgpu_model_bench --benchmark_filter='2B/bf16'
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "model/decoder.h"
#include "model/safetensors.h"
#include "model/tiny.h"

namespace {

using namespace qgpu::model;
namespace fs = std::filesystem;

double gBandwidth = 0;  // bytes/s, from BM_MemoryBandwidth (measured on demand if not yet run)

double measureBandwidthHere() {
  // A copy reads and writes each byte: count both, as decode's weight reads are pure reads.
  const size_t bytes = size_t(1) << 30;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s);
  }
  benchmark::DoNotOptimize(b.data());
  return best;
}

// Measured in a child process so that its 2 GiB of buffers do not count in this process's peak
// resident memory.
double measureBandwidth() {
  int fds[2];
  if (::pipe(fds) != 0) return measureBandwidthHere();
  pid_t pid = ::fork();
  if (pid == 0) {
    double bw = measureBandwidthHere();
    (void)!::write(fds[1], &bw, sizeof bw);
    ::_exit(0);
  }
  double bw = 0;
  (void)!::read(fds[0], &bw, sizeof bw);
  ::waitpid(pid, nullptr, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  return bw;
}

// VmHWM (peak resident set) of this process, in bytes.
double peakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0;
}

std::string benchDir() {
  const char* env = std::getenv("QGPU_BENCH_DIR");
  return env ? env : "/tmp";
}

std::string ensureCheckpoint(const std::string& name, const TinySpec& spec) {
  std::string dir = benchDir() + "/qgpu-bench-" + name;
  if (!fs::exists(dir + "/config.json")) {
    auto status = generateTinyCheckpoint(dir, spec);
    if (!status) {
      std::fprintf(stderr, "%s\n", status.error().str().c_str());
      std::exit(3);
    }
  }
  return dir;
}

void BM_MemoryBandwidth(benchmark::State& state) {
  for (auto _ : state) gBandwidth = measureBandwidth();
  state.counters["GB_per_s"] = gBandwidth / 1e9;
}
BENCHMARK(BM_MemoryBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);

void runDecode(benchmark::State& state, const std::string& dir, ComputeDtype dtype, int64_t promptLen) {
  auto decoder = Decoder::load(dir, DecoderOptions{dtype});
  if (!decoder) {
    state.SkipWithError(decoder.error().str().c_str());
    return;
  }
  auto ckpt = Checkpoint::open(dir);
  const double ckptBytes = ckpt ? static_cast<double>(ckpt->dataBytes()) : 0;
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < promptLen; ++i) prompt.push_back((i * 7919) % (*decoder)->config().vocabSize);
  auto first = (*decoder)->forward(prompt);
  int64_t tok = first ? first->argmax(0) : 0;
  double seconds = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto step = (*decoder)->forward(std::span<const int64_t>(&tok, 1));
    tok = step->argmax(0);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double peak = peakRssBytes();
  if (gBandwidth == 0) gBandwidth = measureBandwidth();
  const double perToken = seconds / static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = 1.0 / perToken;
  const double floorSeconds = static_cast<double>((*decoder)->weightBytes()) / gBandwidth;
  state.counters["floor_ms"] = floorSeconds * 1e3;
  state.counters["weight_GB"] = static_cast<double>((*decoder)->weightBytes()) / 1e9;
  state.counters["ckpt_GB"] = ckptBytes / 1e9;
  state.counters["peak_rss_GB"] = peak / 1e9;
  state.counters["peak_over_ckpt"] = ckptBytes > 0 ? peak / ckptBytes : 0;
  state.counters["x_floor"] = perToken / floorSeconds;
}

void BM_DecodeTiny(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  TinySpec spec{tinyConfig(256, 8, 4096), 1, bf16 ? StDtype::BF16 : StDtype::F32};
  std::string dir = ensureCheckpoint(bf16 ? "tiny-bf16" : "tiny-f32", spec);
  runDecode(state, dir, bf16 ? ComputeDtype::BF16 : ComputeDtype::F32, 16);
}
BENCHMARK(BM_DecodeTiny)->ArgName("bf16")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Decode2B(benchmark::State& state, ComputeDtype dtype) {
  TinySpec spec{qwen35_2bConfig(), 1, StDtype::BF16};
  std::string dir = ensureCheckpoint("2b-bf16", spec);
  runDecode(state, dir, dtype, 8);
}
BENCHMARK_CAPTURE(BM_Decode2B, f32, ComputeDtype::F32)->Iterations(8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode2B, bf16, ComputeDtype::BF16)->Iterations(8)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
