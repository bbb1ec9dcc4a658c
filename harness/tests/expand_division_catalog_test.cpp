// Every catalog kernel that divides, under clang-14 and nvcc: built with and without the division
// expansion (host/lower/expand_division.h, BuildOptions::expandDivision), run in the interpreter,
// both must match the kernel file's expected outputs (kernels/reference, never a qgpu leg) and
// leave the same final memory; the expanded program has no div/rem and fits the machine. Prints
// the cost per kernel (ops, blocks, steps and trace tokens before -> after), the table quoted in
// docs/circuit.md §8 "Division". A missing compiler skips its cases with the reason.
#include <gtest/gtest.h>

#include <string>

#include "harness/tests/expansion_catalog.h"
#include "host/lower/expand_division.h"

namespace qgpu::harness {
namespace {

int divisions(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks)
    for (const machine::Instr& in : b.ops) n += lower::isDivision(in.op) ? 1 : 0;
  return n;
}

TEST(ExpandDivisionCatalog, EveryDividingKernelGivesTheSameMemory) {
  int dividing = 0, skipped = 0;
  printCostHeader("divs");
  forEachCatalogBuild({}, skipped, [&](CatalogBuild& k) {
    ASSERT_TRUE(k.plain.built()) << k.name << ": " << k.plain.kernel.error().str();
    const int divs = divisions(k.plain.kernel->program);
    if (divs == 0) return;
    ++dividing;
    BuildOptions build;
    build.expandDivision = true;
    InterpCase expanded = runInterpCase(k.spec, k.compiler, {}, build);
    ASSERT_TRUE(expanded.built()) << k.name << ": " << expanded.kernel.error().str();
    if (!expectSameMemory(k.plain, expanded, k.name)) return;
    EXPECT_EQ(divisions(expanded.kernel->program), 0) << k.name;
    EXPECT_EQ(expanded.kernel->division.expanded + expanded.kernel->division.removed, divs)
        << k.name;
    printCostRow(k, divs, expanded);
  });
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  // The catalog has dividing kernels under each compiler (8 each today): none found would mean
  // this test checks nothing.
  EXPECT_GE(dividing, 8 * (2 - skipped));
}

}  // namespace
}  // namespace qgpu::harness
