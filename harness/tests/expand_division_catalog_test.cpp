// Every catalog kernel that divides, under clang-14 and nvcc: built with and without the division
// expansion (host/lower/expand_division.h, BuildOptions::expandDivision), run in the interpreter,
// both must match the kernel file's expected outputs (kernels/reference, never a qgpu leg) and
// leave the same final memory; the expanded program has no div/rem and fits the machine. Prints
// the cost per kernel (ops, blocks, steps and trace tokens before -> after), the table quoted in
// docs/circuit.md §8 "Division". A missing compiler skips its cases with the reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness/pipeline.h"
#include "host/lower/expand_division.h"

namespace qgpu::harness {
namespace {

int divisions(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks)
    for (const machine::Instr& in : b.ops) n += lower::isDivision(in.op) ? 1 : 0;
  return n;
}

int ops(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks) n += static_cast<int>(b.ops.size());
  return n;
}

TEST(ExpandDivisionCatalog, EveryDividingKernelGivesTheSameMemory) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  int dividing = 0, skipped = 0;
  std::printf("%-18s %-5s %4s  %-11s %-10s %-10s %-13s\n", "kernel", "cc", "divs", "ops", "blocks", "steps",
              "trace tokens");
  for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc}) {
    if (!host::toolAvailable(c)) {
      ++skipped;
      continue;
    }
    for (const kernels::KernelSpec& spec : *catalog) {
      InterpCase plain = runInterpCase(spec, c);
      ASSERT_TRUE(plain.built()) << spec.name << ": " << plain.kernel.error().str();
      const int divs = divisions(plain.kernel->program);
      if (divs == 0) continue;
      ++dividing;
      BuildOptions build;
      build.expandDivision = true;
      InterpCase expanded = runInterpCase(spec, c, {}, build);
      const std::string name = spec.name + " (" + host::compilerName(c) + ")";
      ASSERT_TRUE(expanded.built()) << name << ": " << expanded.kernel.error().str();
      EXPECT_EQ(plain.result.verdict, Verdict::Match) << name << ": " << plain.result.detail;
      EXPECT_EQ(expanded.result.verdict, Verdict::Match) << name << ": " << expanded.result.detail;
      ASSERT_TRUE(plain.run.ok() && expanded.run.ok()) << name;
      EXPECT_EQ(plain.run->global, expanded.run->global) << name;
      const machine::Program& p = plain.kernel->program;
      const machine::Program& e = expanded.kernel->program;
      EXPECT_EQ(divisions(e), 0) << name;
      EXPECT_TRUE(machine::verify(e, expanded.kernel->image.toMachineLaunch()).ok()) << name;
      EXPECT_EQ(expanded.kernel->division.expanded + expanded.kernel->division.removed, divs) << name;
      std::printf("%-18s %-5s %4d  %4d -> %-4d %3zu -> %-3zu %4llu -> %-5llu %6zu -> %zu\n", spec.name.c_str(),
                  host::compilerName(c), divs, ops(p), ops(e), p.blocks.size(), e.blocks.size(),
                  static_cast<unsigned long long>(plain.run->blockExecs),
                  static_cast<unsigned long long>(expanded.run->blockExecs), plain.run->trace.size(),
                  expanded.run->trace.size());
    }
  }
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  // The catalog has dividing kernels under each compiler (8 each today): none found would mean
  // this test checks nothing.
  EXPECT_GE(dividing, 8 * (2 - skipped));
}

}  // namespace
}  // namespace qgpu::harness
