// qgpu/bench/leg_bench.cpp — the model leg's speed (docs/circuit.md §9 "Built: the leg"): the
// circuit build, the checkpoint's load, and a catalog kernel's circuit target program run token by
// token through model/'s decoder, in fp32 and bf16.
//
// Counters: `prefill_tokens_per_s` (the prompt, one chunked forward), `decode_tokens_per_s` (one
// forward per generated token), `lane_instrs_per_s` (the program's lane instructions — ops × active
// lanes, counted once by the interpreter outside the timing — per second of prefill and decode),
// `tokens`, `held_MB` (the weights the decoder holds: their nonzero blocks, model/linear.h).
// The checkpoint (11 GB) is written once per process into $QGPU_BENCH_DIR (default /tmp) and
// removed at exit; the kernel needs clang-14. Nothing here runs in the tests.
//   qgpu_leg_bench                              build, load, run
//   qgpu_leg_bench --benchmark_filter=Run/f32   one dtype
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include "circuit/leg.h"
#include "harness/model_leg.h"
#include "harness/pipeline.h"
#include "oracle/interpreter.h"

namespace {

namespace fs = std::filesystem;
using namespace qgpu;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The checkpoint directory, removed when the process ends.
struct Checkpoint {
  std::string dir;
  double writeSeconds = 0;
  std::string error;
  Checkpoint() {
    const char* base = std::getenv("QGPU_BENCH_DIR");
    dir = (fs::path(base ? base : "/tmp") / ("qgpu_leg_bench_" + std::to_string(::getpid()))).string();
    const Clock::time_point t0 = Clock::now();
    Status s = circuit::writeLegCheckpoint(dir);
    writeSeconds = since(t0);
    if (!s.ok()) error = s.error().str();
  }
  ~Checkpoint() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

Checkpoint& checkpoint() {
  static Checkpoint c;
  return c;
}

void BM_LegBuild(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(checkpoint().writeSeconds);
  if (!checkpoint().error.empty()) state.SkipWithError(checkpoint().error.c_str());
}
BENCHMARK(BM_LegBuild)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

void BM_LegLoad(benchmark::State& state, model::ComputeDtype dtype) {
  if (!checkpoint().error.empty()) return state.SkipWithError(checkpoint().error.c_str());
  uint64_t held = 0;
  for (auto _ : state) {
    auto decoder = model::Decoder::load(checkpoint().dir, {dtype, "cpu"});
    if (!decoder.ok()) return state.SkipWithError(decoder.error().str().c_str());
    held = (*decoder)->weightBytes();
  }
  state.counters["held_MB"] = static_cast<double>(held) / 1e6;
}
BENCHMARK_CAPTURE(BM_LegLoad, f32, model::ComputeDtype::F32)->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegLoad, bf16, model::ComputeDtype::BF16)->Iterations(2)->Unit(benchmark::kSecond);

// matmul4x4 (clang): 16 threads in 4 warps, 4 multiplies in the model's multiplier, 8 steps, 413
// generated tokens (1,794 in 43 steps when the multiplies were expanded into shift-add loops).
void BM_LegRun(benchmark::State& state, model::ComputeDtype dtype) {
  if (!checkpoint().error.empty()) return state.SkipWithError(checkpoint().error.c_str());
  if (!host::toolAvailable(host::Compiler::Clang)) return state.SkipWithError("clang-14 is not installed");
  auto spec = harness::resolveKernel("matmul4x4", kernels::defaultCatalogDir());
  if (!spec.ok()) return state.SkipWithError(spec.error().str().c_str());
  const harness::BuildOptions build = harness::circuitBuildOptions();
  auto kernel = harness::buildKernel(*spec, host::Compiler::Clang, build);
  if (!kernel.ok()) return state.SkipWithError(kernel.error().str().c_str());
  const machine::Launch launch = kernel->image.toMachineLaunch();
  oracle::RunOptions options;
  options.maxSteps = circuit::kLegStepLimit;
  auto reference = oracle::run(kernel->program, launch, options);
  if (!reference.ok()) return state.SkipWithError(reference.error().str().c_str());
  auto decoder = model::Decoder::load(checkpoint().dir, {dtype, "cpu"});
  if (!decoder.ok()) return state.SkipWithError(decoder.error().str().c_str());
  double prefill = 0, decode = 0;
  size_t prompt = 0, run = 0;
  for (auto _ : state) {
    auto leg = harness::runLeg(**decoder, kernel->program, launch, 20000);
    if (!leg.ok()) return state.SkipWithError(leg.error().str().c_str());
    if (leg->run != reference->trace) return state.SkipWithError("the model's tokens differ from the interpreter's");
    prefill += leg->prefillSeconds;
    decode += leg->decodeSeconds;
    prompt = leg->prompt.size();
    run = leg->run.size();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["tokens"] = static_cast<double>(run);
  state.counters["prefill_tokens_per_s"] = static_cast<double>(prompt) * n / prefill;
  state.counters["decode_tokens_per_s"] = static_cast<double>(run) * n / decode;
  state.counters["lane_instrs_per_s"] = static_cast<double>(reference->laneInstrs) * n / (prefill + decode);
}
BENCHMARK_CAPTURE(BM_LegRun, f32, model::ComputeDtype::F32)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegRun, bf16, model::ComputeDtype::BF16)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
