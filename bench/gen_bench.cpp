// qgpu/bench/gen_bench.cpp — random machine programs per second (gen/program_gen.h).
//
// Each iteration generates the case for the next seed under the default policy and runs it:
//   BM_GenProgramOnly             generation alone (including the verify the generator runs);
//   BM_GenProgramAndInterpret     generate + interpret, no trace: the issue-9 figure (target:
//                                 10,000 random machine programs per second on one core);
//   BM_GenProgramInterpretTrace   generate + interpret with the token trace;
//   BM_GenProgramAllProperties    generate + every property of gen/properties.h (two runs, the
//                                 prompt round trip, the trace re-checked against the steps).
// Counters: cases (per second), steps (per second) and steps_per_case.
#include <benchmark/benchmark.h>

#include "gen/program_gen.h"
#include "gen/properties.h"
#include "oracle/interpreter.h"

namespace {

enum class Mode { GenerateOnly, Interpret, InterpretTrace, AllProperties };

void genBench(benchmark::State& state, Mode mode) {
  const qgpu::gen::Policy policy;
  uint64_t seed = 1, cases = 0, steps = 0;
  for (auto _ : state) {
    auto c = qgpu::gen::generateProgram(policy, seed++);
    if (!c.ok()) {
      state.SkipWithError(c.error().message.c_str());
      return;
    }
    if (mode == Mode::Interpret || mode == Mode::InterpretTrace) {
      qgpu::oracle::RunOptions options = qgpu::gen::runOptions(*c);
      options.recordTrace = mode == Mode::InterpretTrace;
      auto r = qgpu::oracle::run(c->program, c->launch, options);
      if (!r.ok()) {
        state.SkipWithError(r.error().message.c_str());
        return;
      }
      steps += r->blockExecs;
      benchmark::DoNotOptimize(r->global.data());
    } else if (mode == Mode::AllProperties) {
      auto r = qgpu::gen::checkCase(*c);
      if (!r.ok()) {
        state.SkipWithError(r.error().message.c_str());
        return;
      }
      steps += r->blockExecs;
    }
    benchmark::DoNotOptimize(c->program.blocks.data());
    ++cases;
  }
  state.counters["cases"] =
      benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
  state.counters["steps"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["steps_per_case"] =
      cases ? static_cast<double>(steps) / static_cast<double>(cases) : 0;
}

void BM_GenProgramOnly(benchmark::State& state) {
  genBench(state, Mode::GenerateOnly);
}
void BM_GenProgramAndInterpret(benchmark::State& state) {
  genBench(state, Mode::Interpret);
}
void BM_GenProgramInterpretTrace(benchmark::State& state) {
  genBench(state, Mode::InterpretTrace);
}
void BM_GenProgramAllProperties(benchmark::State& state) {
  genBench(state, Mode::AllProperties);
}

BENCHMARK(BM_GenProgramOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GenProgramAndInterpret)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GenProgramInterpretTrace)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GenProgramAllProperties)->Unit(benchmark::kMicrosecond);

}  // namespace
