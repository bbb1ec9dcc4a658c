// qgpu/bench/cuda_gen_bench.cpp — random CUDA cases per second (gen/cuda_gen.h) without the
// compiler: issue 9's target is at least 100 a second through parse -> lower -> interpret.
//
// Setup (not timed): 64 cases of the default policy (seeds 1..64) compiled as one translation
// unit by clang-14 (one compiler run; QGPU_COMPILE_CACHE makes reruns free). Each iteration then
// takes the whole batch:
//   BM_CudaGenParseLowerInterpret  parse the batch's PTX once, then per kernel lower (VIR checked
//                                  after every pass, as the property does), verify with the
//                                  launch, interpret and compare with the generator's expectation;
//   BM_CudaGenProperty             the same plus generation and the PTX evaluator: everything
//                                  checkCudaBatch does per kernel except compiling.
// Cases the front end or lowering refuses count as done (they cost their parse/lowering attempt).
// No clang-14: both are skipped with the reason. Counters: cases (per CPU second), matched (the
// share that lowered and equalled the expectation; the rest were typed refusals).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gen/cuda_check.h"
#include "gen/cuda_gen.h"
#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "ptxeval/eval.h"

namespace {

using namespace qgpu;

constexpr uint64_t kBatchCases = 64;

struct Batch {
  std::vector<gen::CudaCase> cases;
  std::string ptx;
  std::string error;  // non-empty: skip with this reason
};

const Batch& batch() {
  static const Batch b = [] {
    Batch out;
    const gen::CudaPolicy policy;
    for (uint64_t seed = 1; seed <= kBatchCases; ++seed) {
      auto c = gen::generateCuda(policy, seed);
      if (!c) {
        out.error = c.error().str();
        return out;
      }
      out.cases.push_back(std::move(*c));
    }
    host::CompileOptions co;
    co.fileName = "bench_batch.cu";
    auto ptx = host::compileToPtx(gen::cudaBatchSource(out.cases), host::Compiler::Clang, co);
    if (!ptx) out.error = ptx.error().str();
    else out.ptx = std::move(*ptx);
    return out;
  }();
  return b;
}

// One kernel of the parsed batch: lower, verify, interpret, compare. False (with the state
// skipped) when the result is wrong, which the property would call a failure.
bool lowerAndRun(benchmark::State& state, const ptx::Module& module, const gen::CudaCase& c, const std::string& entry,
                 uint64_t& matched) {
  lower::LowerOptions lo;
  lo.entry = entry;
  lo.params = c.params();
  lo.verifyPasses = true;
  auto program = lower::lower(module, lo);
  if (!program) return true;  // a typed refusal: counted as done
  machine::Launch ml;
  ml.gridX = c.gridX;
  ml.blockX = c.blockX;
  ml.global = c.initialGlobal();
  if (!machine::verify(*program, ml)) return true;
  oracle::RunOptions ro;
  ro.recordTrace = false;
  ro.maxSteps = 10'000'000;
  auto run = oracle::run(*program, ml, ro);
  if (!run || run->status != oracle::RunStatus::Finished || run->global != c.expectedGlobal()) {
    state.SkipWithError(("interpreter disagrees with the generator on " + c.header).c_str());
    return false;
  }
  benchmark::DoNotOptimize(run->global.data());
  ++matched;
  return true;
}

void cudaGenBench(benchmark::State& state, bool property) {
  const Batch& b = batch();
  if (!b.error.empty()) {
    state.SkipWithError(b.error.c_str());
    return;
  }
  uint64_t cases = 0, matched = 0;
  for (auto _ : state) {
    if (property) {  // generation is part of the property's cost
      for (uint64_t seed = 1; seed <= kBatchCases; ++seed) benchmark::DoNotOptimize(gen::generateCuda({}, seed));
    }
    auto parsed = gen::parseCudaBatchPtx(b.ptx, b.cases);
    if (!parsed) {
      state.SkipWithError(parsed.error().str().c_str());
      return;
    }
    for (size_t i = 0; i < b.cases.size(); ++i) {
      const gen::CudaCase& c = b.cases[i];
      if (std::find(parsed->refused.begin(), parsed->refused.end(), i) != parsed->refused.end()) continue;
      auto entry = ptx::findEntry(parsed->module, c.name);
      if (!entry) {
        state.SkipWithError(entry.error().str().c_str());
        return;
      }
      if (property) {
        ptxeval::Launch el;
        el.gridX = c.gridX;
        el.blockX = c.blockX;
        el.global = c.initialGlobal();
        for (uint32_t p : c.params()) el.params.push_back(p);
        ptxeval::EvalOptions eo;
        eo.entry = (*entry)->name;
        auto ev = ptxeval::evaluate(parsed->module, el, eo);
        if (!ev || ev->global != c.expectedGlobal()) {
          state.SkipWithError(("the PTX evaluator disagrees with the generator on " + c.header).c_str());
          return;
        }
      }
      if (!lowerAndRun(state, parsed->module, c, (*entry)->name, matched)) return;
    }
    cases += b.cases.size();
  }
  state.counters["cases"] = benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
  // The share of the batch that lowered and matched (the rest: typed refusals).
  state.counters["matched"] = cases ? static_cast<double>(matched) / static_cast<double>(cases) : 0.0;
}

void BM_CudaGenParseLowerInterpret(benchmark::State& s) { cudaGenBench(s, false); }
void BM_CudaGenProperty(benchmark::State& s) { cudaGenBench(s, true); }
BENCHMARK(BM_CudaGenParseLowerInterpret)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaGenProperty)->Unit(benchmark::kMillisecond);

}  // namespace
