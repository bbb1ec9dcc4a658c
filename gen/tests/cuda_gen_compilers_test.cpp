// qgpu/gen/tests/cuda_gen_compilers_test.cpp — the random CUDA property under clang-14 and nvcc
// (label tools): for batches of generated kernels, compiled as one translation unit per
// compiler, the PTX evaluator and lowering + interpreter leave the generator's expected memory,
// lowering refuses only with a typed error, and the two compilers agree (gen/cuda_check.h). The
// checker's twins: a tampered expectation and a kernel the compiler rejects are each caught and
// named. The rapidcheck property shrinks a failing batch to its failing seeds; ctest runs it with
// RC_PARAMS="max_success=2" (rapidcheck prints the reproduce string on failure).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "gen/cuda_check.h"

#ifdef QGPU_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#endif

namespace qgpu::gen {
namespace {

const std::vector<host::Compiler> kBoth = {host::Compiler::Clang, host::Compiler::Nvcc};

bool haveCompilers() { return host::toolAvailable(host::Compiler::Clang) && host::toolAvailable(host::Compiler::Nvcc); }

std::vector<CudaCase> casesFrom(uint64_t first, uint64_t n, const CudaPolicy& p = CudaPolicy{}) {
  std::vector<CudaCase> out;
  for (uint64_t s = first; s < first + n; ++s) {
    auto c = generateCuda(p, s);
    if (c) out.push_back(std::move(*c));
  }
  return out;
}

TEST(CudaProperty, BatchHoldsUnderBothCompilers) {
  if (!haveCompilers()) GTEST_SKIP() << "clang-14 or nvcc missing";
  auto cases = casesFrom(1, 48);
  ASSERT_EQ(cases.size(), 48u);
  CudaBatchStats st;
  auto t = std::chrono::steady_clock::now();
  auto results = checkCudaBatch(cases, kBoth, &st);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  ASSERT_TRUE(results) << results.error().str();
  int match = 0, limit = 0, unsupported = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& r = (*results)[i];
    ASSERT_TRUE(r) << r.error().str() << "\n" << cases[i].text;
    ASSERT_EQ(r->legs.size(), 2u);
    for (const CudaLeg& leg : r->legs) {
      match += leg.verdict == CudaVerdict::Match;
      limit += leg.verdict == CudaVerdict::RefusedLimit;
      unsupported += leg.verdict == CudaVerdict::RefusedUnsupported;
    }
  }
  std::printf("48 kernels x 2 compilers: %d match, %d refused (limit), %d refused (unsupported); "
              "%d compiler runs, %.2f s compiling, %.2f s checking, %.1f kernels/s end to end\n",
              match, limit, unsupported, st.compilerRuns, st.compileSeconds, st.checkSeconds, 48 / wall);
  EXPECT_EQ(st.compilerRuns, 2);  // one translation unit per compiler
  EXPECT_GT(match, 48);           // most legs run (the default policy keeps kernels small)
}

// The twin of the property: an expectation one bit off is caught, naming the word, by the PTX
// evaluator's comparison (before lowering runs).
TEST(CudaProperty, TamperedExpectationIsCaught) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 missing";
  auto cases = casesFrom(5, 1);
  ASSERT_EQ(cases.size(), 1u);
  CudaCase& c = cases[0];
  std::string line = "// expect: acc = ";
  size_t at = c.text.find(line);
  ASSERT_NE(at, std::string::npos);
  c.expectAcc[0] ^= 1u;
  std::string values;
  for (uint32_t w : c.expectAcc) values += (values.empty() ? "" : " ") + std::to_string(w);
  c.text.replace(at, c.text.find('\n', at) - at, line + values);
  const std::vector<host::Compiler> clang = {host::Compiler::Clang};
  auto results = checkCudaBatch(cases, clang);
  ASSERT_TRUE(results);
  ASSERT_FALSE((*results)[0]);
  EXPECT_NE((*results)[0].error().message.find("acc[0]"), std::string::npos) << (*results)[0].error().str();
}

// The same for the wide arrays (v4): one bit off in o8's first element is caught and named.
TEST(CudaProperty, TamperedWideArrayExpectationIsCaught) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 missing";
  CudaPolicy p;
  p.wideArraysProb = 1;
  auto cases = casesFrom(5, 1, p);
  ASSERT_EQ(cases.size(), 1u);
  CudaCase& c = cases[0];
  ASSERT_TRUE(c.wide);
  std::string line = "// expect: o8 = ";
  size_t at = c.text.find(line);
  ASSERT_NE(at, std::string::npos);
  c.expectO8[0] = canonical(c.t8, c.expectO8[0] ^ 1u);
  auto g = c.expectedGlobal();
  std::string values;
  for (uint32_t w = c.o8Word(); w < c.endWord(); ++w) values += (values.empty() ? "" : " ") + std::to_string(g[w]);
  c.text.replace(at, c.text.find('\n', at) - at, line + values);
  const std::vector<host::Compiler> clang = {host::Compiler::Clang};
  auto results = checkCudaBatch(cases, clang);
  ASSERT_TRUE(results);
  ASSERT_FALSE((*results)[0]);
  EXPECT_NE((*results)[0].error().message.find("o8 word 0"), std::string::npos) << (*results)[0].error().str();
}

// A batch the compiler rejects is retried case by case: the bad case fails, naming the compiler's
// error, and the others still hold.
TEST(CudaProperty, RejectedKernelIsNamedAndTheRestOfTheBatchStillRuns) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 missing";
  auto cases = casesFrom(10, 3);
  ASSERT_EQ(cases.size(), 3u);
  cases[1].text += "\nint broken = ;\n";
  const std::vector<host::Compiler> clang = {host::Compiler::Clang};
  CudaBatchStats st;
  auto results = checkCudaBatch(cases, clang, &st);
  ASSERT_TRUE(results);
  EXPECT_TRUE((*results)[0]) << (*results)[0].error().str();
  ASSERT_FALSE((*results)[1]);
  EXPECT_NE((*results)[1].error().message.find("rejected"), std::string::npos);
  EXPECT_TRUE((*results)[2]) << (*results)[2].error().str();
  EXPECT_EQ(st.compilerRuns, 4);  // the batch, then each case
}

#ifdef QGPU_HAVE_RAPIDCHECK
// Random batches of seeds under a random policy variation; a failure shrinks to the failing seeds.
RC_GTEST_PROP(CudaPropertyRc, RandomBatchesHoldUnderBothCompilers, ()) {
  if (!haveCompilers()) RC_DISCARD("clang-14 or nvcc missing");
  auto seeds = *rc::gen::container<std::vector<uint64_t>>(24, rc::gen::inRange<uint64_t>(1, 1u << 30));
  // Small sizes draw repeated seeds: one kernel per seed (two of one name do not compile together).
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  CudaPolicy p;
  p.maxExprDepth = *rc::gen::inRange(1, 4);
  p.maxTopStmts = *rc::gen::inRange(1, 6);
  p.maxVars = *rc::gen::inRange(1, 5);
  std::vector<CudaCase> cases;
  for (uint64_t s : seeds) {
    auto c = generateCuda(p, s);
    RC_ASSERT(c.ok());
    cases.push_back(std::move(*c));
  }
  auto results = checkCudaBatch(cases, kBoth);
  RC_ASSERT(results.ok());
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!(*results)[i]) RC_FAIL((*results)[i].error().str() + "\n" + cases[i].text);
  }
}
#endif

}  // namespace
}  // namespace qgpu::gen
