// qgpu/bench/ptx_gen_bench.cpp — random PTX cases per second (gen/ptx_gen.h), by stage.
//
// Each iteration takes the next seed under the default policy, alternating the clang and nvcc
// dialects:
//   BM_PtxGenOnly         generation alone (the PTX text);
//   BM_PtxGenParse        generate + parse (with the front end's verify);
//   BM_PtxGenEvaluate     generate + parse + the PTX evaluator;
//   BM_PtxGenProperty     the whole property (checkPtxCase: parse, evaluate, lower, verify,
//                         interpret, compare): the issue-9 random-PTX figure.
// Counter: cases (per second).
#include <benchmark/benchmark.h>

#include "gen/ptx_gen.h"
#include "host/ptx/parser.h"
#include "ptxeval/eval.h"

namespace {

enum class Stage { Generate, Parse, Evaluate, Property };

void ptxGenBench(benchmark::State& state, Stage stage) {
  const qgpu::gen::PtxPolicy policy;
  uint64_t seed = 1, cases = 0;
  for (auto _ : state) {
    auto dialect = seed % 2 ? qgpu::gen::PtxDialect::Clang : qgpu::gen::PtxDialect::Nvcc;
    auto c = qgpu::gen::generatePtx(policy, seed++, dialect);
    if (!c.ok()) {
      state.SkipWithError(c.error().message.c_str());
      return;
    }
    if (stage == Stage::Property) {
      auto r = qgpu::gen::checkPtxCase(*c);
      if (!r.ok()) {
        state.SkipWithError(r.error().message.c_str());
        return;
      }
    } else if (stage != Stage::Generate) {
      auto m = qgpu::ptx::parse(c->ptx, "gen.ptx");
      if (!m.ok()) {
        state.SkipWithError(m.error().message.c_str());
        return;
      }
      if (stage == Stage::Evaluate) {
        qgpu::ptxeval::Launch l;
        l.gridX = c->gridX;
        l.blockX = c->blockX;
        l.global = c->global;
        l.params.assign(c->params.begin(), c->params.end());
        auto r = qgpu::ptxeval::evaluate(*m, l);
        if (!r.ok()) {
          state.SkipWithError(r.error().message.c_str());
          return;
        }
        benchmark::DoNotOptimize(r->global.data());
      }
    }
    benchmark::DoNotOptimize(c->ptx.data());
    ++cases;
  }
  state.counters["cases"] = benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
}

void BM_PtxGenOnly(benchmark::State& s) { ptxGenBench(s, Stage::Generate); }
void BM_PtxGenParse(benchmark::State& s) { ptxGenBench(s, Stage::Parse); }
void BM_PtxGenEvaluate(benchmark::State& s) { ptxGenBench(s, Stage::Evaluate); }
void BM_PtxGenProperty(benchmark::State& s) { ptxGenBench(s, Stage::Property); }
BENCHMARK(BM_PtxGenOnly);
BENCHMARK(BM_PtxGenParse);
BENCHMARK(BM_PtxGenEvaluate);
BENCHMARK(BM_PtxGenProperty);

}  // namespace
