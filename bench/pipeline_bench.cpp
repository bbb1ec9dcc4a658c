// Compile + lower time per kernel: the host's cost of turning a catalog kernel into a machine
// program. CUDA → PTX runs the real compiler (a subprocess: clang-14 or nvcc); PTX → program is
// qgpu's own parse + lower, measured over the whole catalog's PTX (compiled once, outside the
// timing) and reported per kernel.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "harness/pipeline.h"
#include "host/lower/tests/huge_ptx.h"
#include "host/ptx/parser.h"

namespace {

using qgpu::host::Compiler;

struct CompiledCatalog {
  std::vector<std::string> names;
  std::vector<std::string> ptx;
  std::vector<std::vector<uint32_t>> params;
};

const CompiledCatalog& catalogPtx(Compiler compiler) {
  static CompiledCatalog byCompiler[2];
  CompiledCatalog& c = byCompiler[static_cast<int>(compiler)];
  if (!c.names.empty()) return c;
  auto catalog = qgpu::kernels::loadCatalog(qgpu::kernels::defaultCatalogDir());
  if (!catalog.ok()) return c;
  for (const auto& spec : *catalog) {
    auto built = qgpu::harness::buildKernel(spec, compiler);
    if (!built.ok()) continue;
    c.names.push_back(spec.name);
    c.ptx.push_back(built->ptx);
    c.params.push_back(built->image.params);
  }
  return c;
}

void parseAndLowerCatalog(benchmark::State& state, Compiler compiler) {
  const CompiledCatalog& c = catalogPtx(compiler);
  if (c.names.empty()) {
    state.SkipWithError("no catalog PTX (compiler missing?)");
    return;
  }
  for (auto _ : state) {
    for (size_t k = 0; k < c.names.size(); ++k) {
      auto module = qgpu::ptx::parse(c.ptx[k], c.names[k]);
      auto entry = qgpu::ptx::findEntry(*module, c.names[k]);
      qgpu::lower::LowerOptions options{(*entry)->name, c.params[k]};
      auto program = qgpu::lower::lower(*module, options);
      benchmark::DoNotOptimize(program);
    }
  }
  state.counters["kernels"] = static_cast<double>(c.names.size());
  state.counters["kernels/s"] = benchmark::Counter(
      static_cast<double>(c.names.size() * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(parseAndLowerCatalog, clang, Compiler::Clang)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(parseAndLowerCatalog, nvcc, Compiler::Nvcc)->Unit(benchmark::kMillisecond);

// One kernel, CUDA source to machine program, the compiler included: the compile cache
// ($QGPU_COMPILE_CACHE, host/cuda/compile.h) is switched off, or this would time a cache hit.
void compileAndLower(benchmark::State& state, Compiler compiler) {
  ::unsetenv("QGPU_COMPILE_CACHE");
  auto spec = qgpu::kernels::parseKernelFile(qgpu::kernels::defaultCatalogDir() + "/matmul.cu");
  if (!spec.ok() || !qgpu::host::toolAvailable(compiler)) {
    state.SkipWithError("matmul.cu or the compiler is missing");
    return;
  }
  for (auto _ : state) {
    auto built = qgpu::harness::buildKernel(*spec, compiler);
    if (!built.ok()) state.SkipWithError(built.error().str().c_str());
    benchmark::DoNotOptimize(built);
  }
}
BENCHMARK_CAPTURE(compileAndLower, clang_matmul, Compiler::Clang)
    ->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(compileAndLower, nvcc_matmul, Compiler::Nvcc)
    ->Unit(benchmark::kMillisecond)->Iterations(3);

// Parse + lower of inputs at the front end's 4 MiB cap (host/lower/tests/huge_ptx.h): each must be
// answered in about a second (OverLimit for shapes that cannot fit, a small program for code that
// is unreachable or dead). Before the fix these took minutes.
void parseAndLowerHuge(benchmark::State& state, qgpu::lower::testing::HugeShape shape) {
  const std::string text = qgpu::lower::testing::hugePtx(shape, qgpu::ptx::kMaxInputBytes);
  for (auto _ : state) {
    auto module = qgpu::ptx::parse(text, "huge.ptx");
    if (!module.ok()) {
      state.SkipWithError(module.error().str().c_str());
      return;
    }
    qgpu::lower::LowerOptions options{"big", {0}};
    auto program = qgpu::lower::lower(*module, options);
    benchmark::DoNotOptimize(program);
  }
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}
using qgpu::lower::testing::HugeShape;
BENCHMARK_CAPTURE(parseAndLowerHuge, straight_4MiB, HugeShape::Straight)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(parseAndLowerHuge, branches_4MiB, HugeShape::Branches)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(parseAndLowerHuge, diamonds_4MiB, HugeShape::Diamonds)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(parseAndLowerHuge, unreachable_4MiB, HugeShape::Unreachable)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(parseAndLowerHuge, empty_jumps_4MiB, HugeShape::EmptyJumps)->Unit(benchmark::kMillisecond);

}  // namespace
