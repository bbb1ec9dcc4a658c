// The catalog through the whole host pipeline: every kernel, compiled with clang-14 and with nvcc,
// parsed, lowered, run twice in the interpreter, and compared with the expected outputs written in
// its file (computed by kernels/reference, never by the interpreter). One test per (kernel,
// compiler), so a failure names both. A missing compiler skips its cases with the reason.
#include <gtest/gtest.h>

#include "harness/pipeline.h"

namespace qgpu::harness {
namespace {

struct CatalogCase {
  std::string kernel;
  host::Compiler compiler;
};

std::vector<CatalogCase> allCases() {
  std::vector<CatalogCase> cases;
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  if (!catalog.ok()) return cases;  // CatalogLoads reports the error
  for (const kernels::KernelSpec& spec : *catalog)
    for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc})
      cases.push_back({spec.name, c});
  return cases;
}

class CatalogInterp : public ::testing::TestWithParam<CatalogCase> {};

TEST_P(CatalogInterp, MatchesExpectedOutputs) {
  const CatalogCase& c = GetParam();
  if (!host::toolAvailable(c.compiler))
    GTEST_SKIP() << host::compilerName(c.compiler) << " is not installed";
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/" + c.kernel + ".cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  InterpCase result = runInterpCase(*spec, c.compiler);
  EXPECT_EQ(result.result.verdict, Verdict::Match)
      << verdictName(result.result.verdict) << ": " << result.result.detail;
  if (result.run.ok()) {
    EXPECT_LE(result.kernel->program.blocks.size(), size_t{machine::kMaxBlocks});
    EXPECT_GT(result.run->trace.size(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, CatalogInterp, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<CatalogCase>& info) {
                           return info.param.kernel + "_" +
                                  host::compilerName(info.param.compiler);
                         });

TEST(CatalogInterpSuite, CatalogLoadsWithAtLeastSixtyKernels) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  EXPECT_GE(catalog->size(), 60u);
}

// The failing twin: a kernel whose expectation is wrong must be reported as a mismatch that
// names the word, not pass.
TEST(CatalogInterpSuite, WrongExpectationIsAMismatch) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/dot.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  kernels::ParamSpec* out = spec->find("out");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->expect.size(), 1u);
  out->expect[0] = 33;  // the dot product of the file's inputs is 32
  InterpCase result = runInterpCase(*spec, host::Compiler::Clang);
  EXPECT_EQ(result.result.verdict, Verdict::Mismatch);
  EXPECT_NE(result.result.detail.find("out"), std::string::npos) << result.result.detail;
}

// A kernel the machine cannot run to completion in the step limit timed out: inconclusive
// (common/outcome.h), with the machine's reason — never a match, never a mismatch.
TEST(CatalogInterpSuite, StepLimitIsInconclusiveWithItsReason) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/collatz.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  oracle::RunOptions tiny;
  tiny.maxSteps = 3;
  InterpCase result = runInterpCase(*spec, host::Compiler::Clang, tiny);
  EXPECT_EQ(result.result.verdict, Verdict::Inconclusive);
  EXPECT_EQ(result.result.error, ErrorKind::StepLimit);
  EXPECT_NE(result.result.detail.find("did not finish"), std::string::npos) << result.result.detail;
}

// Malformed CUDA in a kernel file: a harness error that carries the compiler's located message.
TEST(CatalogInterpSuite, MalformedCudaIsAHarnessErrorWithLocation) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/vadd.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  spec->source += "\n__global__ void broken( { }\n";
  auto built = buildKernel(*spec, host::Compiler::Clang);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().kind, ErrorKind::CompileFailed);
  EXPECT_GT(built.error().loc.line, 0u) << built.error().str();
  EXPECT_EQ(caseVerdict(built.error()), Verdict::HarnessError);
}

// Spill slots × threads overflowing shared memory is only visible with the launch (lower() checks
// the program alone): the case must not count as built, it has no run to read, and it is
// inconclusive (OverLimit: it does not fit the machine), never compared against zeros.
std::string dataDir() { return std::string(QGPU_SOURCE_DIR) + "/harness/tests/data"; }

TEST(CatalogInterpSuite, SpillsOverflowingSharedMemoryAtTheLaunchLeaveTheCaseUnbuilt) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(dataDir() + "/spill_overflows/spill_overflow.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  InterpCase c = runInterpCase(*spec, host::Compiler::Clang);
  EXPECT_FALSE(c.built());
  ASSERT_FALSE(c.kernel.ok());
  EXPECT_EQ(c.kernel.error().kind, ErrorKind::OverLimit) << c.kernel.error().str();
  EXPECT_NE(c.kernel.error().message.find("spill"), std::string::npos) << c.kernel.error().str();
  EXPECT_FALSE(c.run.ok());  // nothing to compare a GPU result with
  EXPECT_EQ(c.result.verdict, Verdict::Inconclusive);
}

// The twin: the same kernel at block=4 fits (112 + 1 × 4 words) and matches.
TEST(CatalogInterpSuite, SpillsThatFitAtTheLaunchBuildAndMatch) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(dataDir() + "/spill_fits/spill_overflow.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  InterpCase c = runInterpCase(*spec, host::Compiler::Clang);
  ASSERT_TRUE(c.built()) << c.result.detail;
  EXPECT_GT(c.kernel->stats.spillSlots, 0);  // the pair tests what it says only if there are spills
  ASSERT_TRUE(c.run.ok());
  EXPECT_EQ(c.result.verdict, Verdict::Match) << c.result.detail;
}

// A store to a word that belongs to no parameter (out[4] of a 4-word `out`, inside memory) is a
// mismatch that names the word, though every array holds what it should.
TEST(CatalogInterpSuite, AWriteOutsideEveryArrayIsAMismatch) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(dataDir() + "/stray_write/stray_write.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  InterpCase c = runInterpCase(*spec, host::Compiler::Clang);
  EXPECT_EQ(c.result.verdict, Verdict::Mismatch);
  EXPECT_NE(c.result.detail.find("(no parameter's) changed: 0x00000000 -> 0x00000007"),
            std::string::npos)
      << c.result.detail;
}

// The twin: the same kernel without the stray store matches.
TEST(CatalogInterpSuite, TheInBoundsTwinOfAStrayWriteMatches) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto spec = kernels::parseKernelFile(dataDir() + "/stray_write_twin/stray_write.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  InterpCase c = runInterpCase(*spec, host::Compiler::Clang);
  EXPECT_EQ(c.result.verdict, Verdict::Match) << c.result.detail;
}

// writesOutsideArrays on hand-made images: array words never count, every other word does.
TEST(WritesOutsideArrays, NamesEveryChangedWordThatBelongsToNoArray) {
  kernels::LaunchImage image;
  image.arrays = {{0, 2, 3}, {1, 6, 2}};  // words 2..4 and 6..7
  std::vector<uint32_t> initial(10, 0), final(10, 0);
  final[3] = 9;  // inside the first array: not this function's business
  final[7] = 9;  // inside the second
  EXPECT_TRUE(writesOutsideArrays(image, initial, final).empty());
  final[5] = 7;  // the gap between them
  final[9] = 1;  // after the last array
  auto stray = writesOutsideArrays(image, initial, final);
  ASSERT_EQ(stray.size(), 2u);
  EXPECT_EQ(stray[0], "word 5 (no parameter's) changed: 0x00000000 -> 0x00000007");
  EXPECT_EQ(stray[1], "word 9 (no parameter's) changed: 0x00000000 -> 0x00000001");
}

}  // namespace
}  // namespace qgpu::harness
