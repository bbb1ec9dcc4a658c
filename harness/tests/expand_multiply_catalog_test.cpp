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
#include <functional>
#include <string>

#include "harness/pipeline.h"
#include "host/lower/expand_multiply.h"

namespace qgpu::harness {
namespace {

int multiplies(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks)
    for (const machine::Instr& in : b.ops) n += lower::isMultiply(in.op) ? 1 : 0;
  return n;
}

int ops(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks) n += static_cast<int>(b.ops.size());
  return n;
}

BuildOptions divisionOnly() {
  BuildOptions b;
  b.expandDivision = true;
  return b;
}

// One catalog kernel under one compiler, built with its divisions expanded — where the
// expansions under test start — and run in the interpreter.
struct DivisionOnlyBuild {
  const kernels::KernelSpec& spec;
  host::Compiler compiler;
  InterpCase plain;
  std::string name;  // "kernel (compiler)"
};

// `each` on every catalog kernel under each installed compiler; `missing` counts the compilers
// that are not installed.
void forEachDivisionOnlyBuild(int& missing, const std::function<void(DivisionOnlyBuild&)>& each) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc}) {
    if (!host::toolAvailable(c)) {
      ++missing;
      continue;
    }
    for (const kernels::KernelSpec& spec : *catalog) {
      DivisionOnlyBuild b{spec, c, runInterpCase(spec, c, {}, divisionOnly()),
                          spec.name + " (" + host::compilerName(c) + ")"};
      each(b);
    }
  }
}

TEST(ExpandMultiplyCatalog, EveryMultiplyingKernelGivesTheSameMemoryOrATypedRefusal) {
  int multiplying = 0, expandedOk = 0, refused = 0, skipped = 0;
  std::printf("%-18s %-5s %4s  %-11s %-10s %-10s %-13s\n", "kernel", "cc", "muls", "ops", "blocks",
              "steps", "trace tokens");
  forEachDivisionOnlyBuild(skipped, [&](DivisionOnlyBuild& k) {
    const kernels::KernelSpec& spec = k.spec;
    const host::Compiler c = k.compiler;
    InterpCase& plain = k.plain;
    const std::string& name = k.name;
    if (!plain.built()) return;  // a division the expansion refuses: expand_division's table
    const int muls = multiplies(plain.kernel->program);
    if (muls == 0) return;
    ++multiplying;
    BuildOptions build = divisionOnly();
    build.expandMultiply = true;
    InterpCase expanded = runInterpCase(spec, c, {}, build);
    if (!expanded.built()) {
      const Diag& d = expanded.kernel.error();
      EXPECT_EQ(d.kind, ErrorKind::OverLimit) << name << ": " << d.str();
      EXPECT_NE(d.message.find("into a shift-add loop"), std::string::npos)
          << name << ": " << d.str();
      EXPECT_NE(d.message.find("PTX line"), std::string::npos) << name << ": " << d.str();
      std::printf("%-18s %-5s %4d  refused: %s\n", spec.name.c_str(), host::compilerName(c), muls,
                  d.message.substr(d.message.find(": expanding") + 2).c_str());
      ++refused;
      return;
    }
    ++expandedOk;
    EXPECT_EQ(plain.result.verdict, Verdict::Match) << name << ": " << plain.result.detail;
    EXPECT_EQ(expanded.result.verdict, Verdict::Match) << name << ": " << expanded.result.detail;
    ASSERT_TRUE(plain.run.ok() && expanded.run.ok()) << name;
    EXPECT_EQ(plain.run->global, expanded.run->global) << name;
    const machine::Program& p = plain.kernel->program;
    const machine::Program& e = expanded.kernel->program;
    EXPECT_EQ(multiplies(e), 0) << name;
    EXPECT_TRUE(machine::verify(e, expanded.kernel->image.toMachineLaunch()).ok()) << name;
    const lower::ExpandMultiplyStats& s = expanded.kernel->multiply;
    EXPECT_EQ(s.chains + s.loops + s.removed, muls) << name;
    std::printf("%-18s %-5s %4d  %4d -> %-4d %3zu -> %-3zu %4llu -> %-5llu %6zu -> %zu\n",
                spec.name.c_str(), host::compilerName(c), muls, ops(p), ops(e), p.blocks.size(),
                e.blocks.size(), static_cast<unsigned long long>(plain.run->blockExecs),
                static_cast<unsigned long long>(expanded.run->blockExecs), plain.run->trace.size(),
                expanded.run->trace.size());
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
  forEachDivisionOnlyBuild(skipped, [&](DivisionOnlyBuild& k) {
    const InterpCase& plain = k.plain;
    const std::string& name = k.name;
    ASSERT_TRUE(plain.built()) << name << ": " << plain.kernel.error().str();
    int mulhis = 0;
    for (const machine::Block& b : plain.kernel->program.blocks)
      for (const machine::Instr& in : b.ops)
        mulhis += lower::isMultiplyHigh(in.op) && in.dst != 0 ? 1 : 0;
    if (mulhis == 0) return;
    ++withMulhi;
    InterpCase circuit = runInterpCase(k.spec, k.compiler, {}, circuitBuildOptions());
    ASSERT_TRUE(circuit.built()) << name << ": " << circuit.kernel.error().str();
    EXPECT_EQ(circuit.kernel->multiply.halves, mulhis) << name;
    EXPECT_EQ(plain.result.verdict, Verdict::Match) << name << ": " << plain.result.detail;
    EXPECT_EQ(circuit.result.verdict, Verdict::Match) << name << ": " << circuit.result.detail;
    ASSERT_TRUE(plain.run.ok() && circuit.run.ok()) << name;
    EXPECT_EQ(plain.run->global, circuit.run->global) << name;
    std::printf("%-18s %-5s %d mulhi: %3llu -> %-3llu steps, %zu -> %zu blocks\n",
                k.spec.name.c_str(), host::compilerName(k.compiler), mulhis,
                static_cast<unsigned long long>(plain.run->blockExecs),
                static_cast<unsigned long long>(circuit.run->blockExecs),
                plain.kernel->program.blocks.size(), circuit.kernel->program.blocks.size());
  });
  if (skipped == 2) GTEST_SKIP() << "neither clang-14 nor nvcc is installed";
  EXPECT_GE(withMulhi, 2 * (2 - skipped));  // checksum_mod255 and int64_ops at least
}

}  // namespace
}  // namespace qgpu::harness
