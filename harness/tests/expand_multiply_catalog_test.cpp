// Every catalog kernel that multiplies, under clang-14 and nvcc: built with and without the circuit
// target's expansions (division, then multiplication: host/lower/expand_multiply.h,
// BuildOptions::expandMultiply), run in the interpreter; both must match the kernel file's
// expected outputs (kernels/reference, never a qgpu leg) and leave the same final memory, and the
// expanded program has no mul/mad/mulhi and fits the machine, or the expansion refuses it with
// a typed OverLimit naming the op and its PTX line. Prints the cost per kernel (ops, blocks,
// steps, trace tokens before -> after), the table docs/lowering.md §8 quotes. A missing compiler
// skips its cases with the reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness/tests/expansion_catalog.h"
#include "host/lower/expand_multiply.h"

namespace qgpu::harness {
namespace {

int multiplies(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks)
    for (const machine::Instr& in : b.ops) n += lower::isMultiply(in.op) ? 1 : 0;
  return n;
}

// The build the multiply expansions start from: divisions expanded.
BuildOptions divisionOnly() {
  BuildOptions b;
  b.expandDivision = true;
  return b;
}

TEST(ExpandMultiplyCatalog, EveryMultiplyingKernelGivesTheSameMemoryOrATypedRefusal) {
  int multiplying = 0, expandedOk = 0, refused = 0, skipped = 0;
  printCostHeader("muls");
  forEachCatalogBuild(divisionOnly(), skipped, [&](CatalogBuild& k) {
    if (!k.plain.built()) return;  // a division the expansion refuses: expand_division's table
    const int muls = multiplies(k.plain.kernel->program);
    if (muls == 0) return;
    ++multiplying;
    BuildOptions build = divisionOnly();
    build.expandMultiply = true;
    InterpCase expanded = runInterpCase(k.spec, k.compiler, {}, build);
    if (!expanded.built()) {
      const Diag& d = expanded.kernel.error();
      EXPECT_EQ(d.kind, ErrorKind::OverLimit) << k.name << ": " << d.str();
      EXPECT_NE(d.message.find("into a shift-add loop"), std::string::npos)
          << k.name << ": " << d.str();
      EXPECT_NE(d.message.find("PTX line"), std::string::npos) << k.name << ": " << d.str();
      std::printf("%-18s %-5s %4d  refused: %s\n", k.spec.name.c_str(),
                  host::compilerName(k.compiler), muls,
                  d.message.substr(d.message.find(": expanding") + 2).c_str());
      ++refused;
      return;
    }
    ++expandedOk;
    if (!expectSameMemory(k.plain, expanded, k.name)) return;
    EXPECT_EQ(multiplies(expanded.kernel->program), 0) << k.name;
    const lower::ExpandMultiplyStats& s = expanded.kernel->multiply;
    EXPECT_EQ(s.chains + s.loops + s.removed, muls) << k.name;
    printCostRow(k, muls, expanded);
  });
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  std::printf("%d multiplying programs: %d expanded, %d refused\n", multiplying, expandedOk, refused);
  // The catalog has dozens of multiplying programs under each compiler and the expansion fits
  // most: far fewer would mean this test checks little.
  EXPECT_GE(expandedOk, 40 * (2 - skipped));
}

// The circuit target's form (circuitBuildOptions: mul and mad stay, mulhi through 16-bit halves):
// every catalog program with a mulhi is built — none refused — and gives the plain build's final
// memory and the kernel file's expected outputs, each mulhi replaced by halves.
TEST(ExpandMultiplyCatalog, EveryMulhiKernelRunsThroughHalvesOnTheCircuitTarget) {
  int withMulhi = 0, skipped = 0;
  forEachCatalogBuild(divisionOnly(), skipped, [&](CatalogBuild& k) {
    ASSERT_TRUE(k.plain.built()) << k.name << ": " << k.plain.kernel.error().str();
    int mulhis = 0;
    for (const machine::Block& b : k.plain.kernel->program.blocks)
      for (const machine::Instr& in : b.ops)
        mulhis += lower::isMultiplyHigh(in.op) && in.dst != 0 ? 1 : 0;
    if (mulhis == 0) return;
    ++withMulhi;
    InterpCase circuit = runInterpCase(k.spec, k.compiler, {}, circuitBuildOptions());
    ASSERT_TRUE(circuit.built()) << k.name << ": " << circuit.kernel.error().str();
    EXPECT_EQ(circuit.kernel->multiply.halves, mulhis) << k.name;
    if (!expectSameMemory(k.plain, circuit, k.name)) return;
    std::printf("%-18s %-5s %d mulhi: %3llu -> %-3llu steps, %zu -> %zu blocks\n",
                k.spec.name.c_str(), host::compilerName(k.compiler), mulhis,
                static_cast<unsigned long long>(k.plain.run->blockExecs),
                static_cast<unsigned long long>(circuit.run->blockExecs),
                k.plain.kernel->program.blocks.size(), circuit.kernel->program.blocks.size());
  });
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  EXPECT_GE(withMulhi, 2 * (2 - skipped));  // checksum_mod255 and int64_ops at least
}

}  // namespace
}  // namespace qgpu::harness
