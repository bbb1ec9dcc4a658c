// qgpu/bench/leg_bench.cpp — the model leg's speed (docs/circuit.md §9 "Built: the leg"): the
// circuit build, the checkpoint's load, and a catalog kernel's circuit target program run token by
// token through model/'s decoder, in fp32 and bf16, on the compact checkpoint and on `2b`
// (circuit/leg.h legShapeByName: Qwen3.5-2B's widths, the trace at its spare rows).
//
// Counters: `prefill_tokens_per_s` (the prompt, one chunked forward), `decode_tokens_per_s` (one
// forward per generated token), `lane_instrs_per_s` (the program's lane instructions — ops × active
// lanes, counted once by the interpreter outside the timing — per second of prefill and decode),
// `tokens`, `held_MB` (the weights the decoder holds: their nonzero blocks, model/linear.h).
// Each shape's checkpoint (compact 9 GB, 2b 13 GB) is written once per process, when a benchmark
// of it first runs, into $QGPU_BENCH_DIR (default /tmp) and removed at exit; the kernel needs
// clang-14. Nothing here runs in the tests.
//   qgpu_leg_bench                                build, load, run: both shapes
//   qgpu_leg_bench --benchmark_filter=compact     one shape
//   qgpu_leg_bench --benchmark_filter=Run/2b_f32  one shape and dtype
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

// A shape's checkpoint directory, removed when the process ends.
struct Checkpoint {
  std::string dir;
  int64_t firstTraceRow = 0;
  double writeSeconds = 0;
  std::string error;
  explicit Checkpoint(const std::string& shapeName) {
    const char* base = std::getenv("QGPU_BENCH_DIR");
    dir = (fs::path(base ? base : "/tmp") /
           ("qgpu_leg_bench_" + shapeName + "_" + std::to_string(::getpid())))
              .string();
    auto shape = circuit::legShapeByName(shapeName);
    if (!shape.ok()) {
      error = shape.error().str();
      return;
    }
    firstTraceRow = shape->firstTraceRow;
    const Clock::time_point t0 = Clock::now();
    auto s = circuit::writeLegCheckpoint(dir, circuit::kLegStepLimit, *shape);
    writeSeconds = since(t0);
    if (!s.ok()) error = s.error().str();
  }
  ~Checkpoint() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

Checkpoint& checkpoint(const std::string& shape) {
  if (shape == "2b") {
    static Checkpoint twoB("2b");
    return twoB;
  }
  static Checkpoint compact("compact");
  return compact;
}

void BM_LegBuild(benchmark::State& state, const std::string& shape) {
  for (auto _ : state) state.SetIterationTime(checkpoint(shape).writeSeconds);
  if (!checkpoint(shape).error.empty()) state.SkipWithError(checkpoint(shape).error.c_str());
}
BENCHMARK_CAPTURE(BM_LegBuild, compact, "compact")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegBuild, 2b, "2b")->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

void BM_LegLoad(benchmark::State& state, const std::string& shape, model::ComputeDtype dtype) {
  const Checkpoint& c = checkpoint(shape);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  uint64_t held = 0;
  for (auto _ : state) {
    auto decoder = model::Decoder::load(c.dir, {dtype, "cpu"});
    if (!decoder.ok()) return state.SkipWithError(decoder.error().str().c_str());
    held = (*decoder)->weightBytes();
  }
  state.counters["held_MB"] = static_cast<double>(held) / 1e6;
}
BENCHMARK_CAPTURE(BM_LegLoad, compact_f32, "compact", model::ComputeDtype::F32)
    ->Iterations(2)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegLoad, compact_bf16, "compact", model::ComputeDtype::BF16)
    ->Iterations(2)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegLoad, 2b_f32, "2b", model::ComputeDtype::F32)
    ->Iterations(2)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegLoad, 2b_bf16, "2b", model::ComputeDtype::BF16)
    ->Iterations(2)
    ->Unit(benchmark::kSecond);

// matmul4x4 (clang): 16 threads in 4 warps, 4 multiplies in the model's multiplier, 8 steps, 413
// generated tokens (1,794 in 43 steps when the multiplies were expanded into shift-add loops).
void BM_LegRun(benchmark::State& state, const std::string& shape, model::ComputeDtype dtype) {
  const Checkpoint& c = checkpoint(shape);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
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
  auto decoder = model::Decoder::load(c.dir, {dtype, "cpu"});
  if (!decoder.ok()) return state.SkipWithError(decoder.error().str().c_str());
  double prefill = 0, decode = 0;
  size_t prompt = 0, run = 0;
  for (auto _ : state) {
    auto leg = harness::runLeg(**decoder, kernel->program, launch, 20000, c.firstTraceRow);
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
BENCHMARK_CAPTURE(BM_LegRun, compact_f32, "compact", model::ComputeDtype::F32)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegRun, compact_bf16, "compact", model::ComputeDtype::BF16)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegRun, 2b_f32, "2b", model::ComputeDtype::F32)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_LegRun, 2b_bf16, "2b", model::ComputeDtype::BF16)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
