// qgpu/harness/tests/expansion_catalog.h — what the catalog tests of the host's expansions
// (expand_division_catalog_test, expand_multiply_catalog_test) share: the walk over every catalog
// kernel under each installed compiler, the check that an expanded build leaves the plain build's
// memory, and the cost row the docs quote (ops, blocks, steps, trace tokens before -> after).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "harness/pipeline.h"

namespace qgpu::harness {

inline int opsIn(const machine::Program& p) {
  int n = 0;
  for (const machine::Block& b : p.blocks) n += static_cast<int>(b.ops.size());
  return n;
}

// One catalog kernel under one compiler, built with `base` and run in the interpreter.
struct CatalogBuild {
  const kernels::KernelSpec& spec;
  host::Compiler compiler;
  InterpCase plain;
  std::string name;  // "kernel (compiler)"
};

// `each` on every catalog kernel under each installed compiler; `missing` counts the compilers
// that are not installed.
inline void forEachCatalogBuild(const BuildOptions& base, int& missing,
                                const std::function<void(CatalogBuild&)>& each) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc}) {
    if (!host::toolAvailable(c)) {
      ++missing;
      continue;
    }
    for (const kernels::KernelSpec& spec : *catalog) {
      CatalogBuild b{spec, c, runInterpCase(spec, c, {}, base),
                     spec.name + " (" + host::compilerName(c) + ")"};
      each(b);
    }
  }
}

// Both builds (built) match the kernel file's expected outputs and leave the same final global
// memory; the expanded program verifies. False (a failure recorded) when a run did not start.
inline bool expectSameMemory(const InterpCase& plain, const InterpCase& expanded,
                             const std::string& name) {
  EXPECT_EQ(plain.result.verdict, Verdict::Match) << name << ": " << plain.result.detail;
  EXPECT_EQ(expanded.result.verdict, Verdict::Match) << name << ": " << expanded.result.detail;
  EXPECT_TRUE(
      machine::verify(expanded.kernel->program, expanded.kernel->image.toMachineLaunch()).ok())
      << name;
  if (!plain.run.ok() || !expanded.run.ok()) {
    ADD_FAILURE() << name << ": a run did not start";
    return false;
  }
  EXPECT_EQ(plain.run->global, expanded.run->global) << name;
  return true;
}

// The cost table: its header (`what`: the column of the expanded ops' count) and one row.
inline void printCostHeader(const char* what) {
  std::printf("%-18s %-5s %4s  %-11s %-10s %-10s %-13s\n", "kernel", "cc", what, "ops", "blocks",
              "steps", "trace tokens");
}
inline void printCostRow(const CatalogBuild& k, int count, const InterpCase& expanded) {
  const machine::Program& p = k.plain.kernel->program;
  const machine::Program& e = expanded.kernel->program;
  std::printf("%-18s %-5s %4d  %4d -> %-4d %3zu -> %-3zu %4llu -> %-5llu %6zu -> %zu\n",
              k.spec.name.c_str(), host::compilerName(k.compiler), count, opsIn(p), opsIn(e),
              p.blocks.size(), e.blocks.size(),
              static_cast<unsigned long long>(k.plain.run->blockExecs),
              static_cast<unsigned long long>(expanded.run->blockExecs), k.plain.run->trace.size(),
              expanded.run->trace.size());
}

}  // namespace qgpu::harness
