// What the model leg runs of the catalog: every kernel under clang-14 and nvcc, built as
// `run --backend model` builds it (circuitBuildOptions: divisions and mulhi expanded; mul and mad
// are the pipeline's own), then asked of circuit::pipelineExecutes, and, where the pipeline executes every
// op, run in the interpreter at the compiled model's step limit (circuit::kLegStepLimit) to see
// whether the run ends inside it. No model is built: this is the leg's reach, not its exactness
// (harness_model_leg_test, ci/model-leg.sh). Prints the table docs/circuit.md §9 "Built: the leg"
// quotes, and the refusals grouped by reason. A missing compiler skips its cases with the reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "circuit/leg.h"
#include "harness/pipeline.h"

namespace qgpu::harness {
namespace {

// "mad" out of "... does not execute 'mad' (block B2, op 3): ...": the refused op's mnemonic.
std::string refusedOp(const std::string& message) {
  size_t open = message.find("execute '");
  open = open == std::string::npos ? open : open + 8;
  const size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
  return close == std::string::npos ? "?" : message.substr(open + 1, close - open - 1);
}

TEST(ModelLegCoverage, EveryCatalogProgramIsRunnableOrRefusedWithItsReason) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  const BuildOptions build = circuitBuildOptions();
  oracle::RunOptions run;
  run.maxSteps = circuit::kLegStepLimit;
  int programs = 0, runnable = 0, withinLimit = 0, skipped = 0;
  std::map<std::string, int> expansionRefused, pipelineRefused;
  for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc}) {
    if (!host::toolAvailable(c)) {
      ++skipped;
      continue;
    }
    for (const kernels::KernelSpec& spec : *catalog) {
      ++programs;
      InterpCase interp = runInterpCase(spec, c, run, build);
      const std::string name = spec.name + " (" + host::compilerName(c) + ")";
      if (!interp.built()) {
        const Diag& d = interp.kernel.error();
        // Only the expansions may refuse a catalog kernel that lowers (the catalog test checks that).
        EXPECT_EQ(d.kind, ErrorKind::OverLimit) << name << ": " << d.str();
        ++expansionRefused[d.message.find("shift-subtract") != std::string::npos
                               ? "division expansion"
                               : "multiply expansion"];
        continue;
      }
      Status executes = circuit::pipelineExecutes(interp.kernel->program);
      if (!executes.ok()) {
        EXPECT_EQ(executes.error().kind, ErrorKind::OverLimit) << name;
        EXPECT_NE(executes.error().message.find("block"), std::string::npos) << name << ": " << executes.error().str();
        ++pipelineRefused[refusedOp(executes.error().message)];
        continue;
      }
      ++runnable;
      const bool inside = interp.result.verdict == Verdict::Match;
      withinLimit += inside ? 1 : 0;
      std::printf("%-20s %-5s runs: %4zu trace tokens, %s\n", spec.name.c_str(), host::compilerName(c),
                  interp.run.ok() ? interp.run->trace.size() : size_t{0},
                  inside ? "matches within the step limit" : interp.result.detail.c_str());
    }
  }
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  std::printf("%d programs: %d the pipeline executes (%d end within %d steps and match)\n",
              programs, runnable, withinLimit, circuit::kLegStepLimit);
  for (const auto& [why, n] : expansionRefused) std::printf("  refused by the %s: %d\n", why.c_str(), n);
  for (const auto& [op, n] : pipelineRefused)
    std::printf("  refused by the pipeline at %s: %d\n", op.c_str(), n);
  // With the circuit's expansions (mulhi through 16-bit halves) every catalog program is built and
  // executed by the pipeline: none refused.
  EXPECT_TRUE(expansionRefused.empty());
  EXPECT_TRUE(pipelineRefused.empty());
  EXPECT_EQ(runnable, programs);
  EXPECT_GT(runnable, 0);
}

}  // namespace
}  // namespace qgpu::harness
