// qgpu/kernels/tests/catalog_test.cpp — the catalog loads and fits the machine; the kernel-file
// parser rejects each malformed header with KernelFile at the right line (label cpu).
#include "kernels/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace qgpu::kernels {
namespace {

// ---- The shipped catalog ----

const std::vector<KernelSpec>& catalog() {
  static const std::vector<KernelSpec> specs = [] {
    auto loaded = loadCatalog(defaultCatalogDir());
    EXPECT_TRUE(loaded.ok()) << loaded.error().str();
    return loaded.ok() ? *loaded : std::vector<KernelSpec>{};
  }();
  return specs;
}

TEST(Catalog, HasAtLeast60Kernels) { EXPECT_GE(catalog().size(), 60u); }

TEST(Catalog, IsSortedWithUniqueNames) {
  std::set<std::string> names;
  for (size_t i = 0; i < catalog().size(); ++i) {
    EXPECT_TRUE(names.insert(catalog()[i].name).second) << catalog()[i].name;
    if (i > 0) {
      EXPECT_LT(catalog()[i - 1].name, catalog()[i].name);
    }
  }
}

TEST(Catalog, EveryLayoutFitsTheMachine) {
  for (const KernelSpec& spec : catalog()) {
    auto image = layout(spec);
    ASSERT_TRUE(image.ok()) << image.error().str();
    EXPECT_LE(image->usedWords, kGlobalWords) << spec.name;
    EXPECT_LE(spec.blockX, kMaxBlockThreads) << spec.name;
    EXPECT_LE(spec.gridX, kMaxGrid) << spec.name;
  }
}

TEST(Catalog, HasTheNormalModeKernels) {
  std::set<std::string> names;
  for (const KernelSpec& spec : catalog()) names.insert(spec.name);
  for (const char* name : {"dot", "vadd", "vsub", "vscale", "sqlen", "matmul", "matvec"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

// A multiset comparison only where an output's order depends on atomic ordering.
TEST(Catalog, EveryKernelHasSummaryTagsAndExpectations) {
  for (const KernelSpec& spec : catalog()) {
    EXPECT_FALSE(spec.summary.empty()) << spec.name;
    EXPECT_FALSE(spec.tags.empty()) << spec.name;
    for (const ParamSpec& p : spec.params) {
      if (p.isOutput()) {
        EXPECT_TRUE(p.hasExpect) << spec.name << "." << p.name;
      }
    }
  }
}

// ---- Parser: a valid base text, then one mutation per error kind ----

constexpr const char* kBase = R"(// qgpu-kernel: k
// summary: test kernel
// launch: grid=1 block=4
// param: a in i32[2] = 1 2
// param: out out i32[2]
// param: n scalar u32 = 2
// expect: out = 3 4
// tags: test
// compare: exact

// A comment after the header is free text: key: value here is ignored.
__global__ void k(const int* __restrict__ a, int* out, unsigned n) {
  out[threadIdx.x] = a[threadIdx.x] + 2;
}
)";

std::string mutate(const std::string& from, const std::string& to) {
  std::string text = kBase;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "mutation anchor not found: " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(KernelParser, AcceptsTheBaseText) {
  auto spec = parseKernelText(kBase, "k.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->name, "k");
  EXPECT_EQ(spec->summary, "test kernel");
  EXPECT_EQ(spec->gridX, 1u);
  EXPECT_EQ(spec->blockX, 4u);
  ASSERT_EQ(spec->params.size(), 3u);
  EXPECT_EQ(spec->params[0].kind, ParamKind::In);
  EXPECT_EQ(spec->params[0].init, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(spec->params[1].kind, ParamKind::Out);
  EXPECT_EQ(spec->params[1].init, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(spec->params[1].expect, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(spec->params[2].kind, ParamKind::Scalar);
  EXPECT_EQ(spec->params[2].type, ElemType::U32);
  EXPECT_EQ(spec->tags, std::vector<std::string>{"test"});
  EXPECT_TRUE(spec->multiset.empty());
}

TEST(KernelParser, ReadsNegativeAndHexValues) {
  auto spec = parseKernelText(mutate("= 1 2", "= -2147483648 0x7fffffff"), "k.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->params[0].init, (std::vector<uint32_t>{0x80000000u, 0x7fffffffu}));
}

struct BadHeader {
  const char* what;     // test label
  const char* from;     // text in kBase to replace
  const char* to;       // replacement
  uint32_t line;        // expected error line
  const char* message;  // expected substring of the message
};

class KernelParserRejects : public ::testing::TestWithParam<BadHeader> {};

TEST_P(KernelParserRejects, WithKernelFileAtTheLine) {
  const BadHeader& bad = GetParam();
  auto spec = parseKernelText(mutate(bad.from, bad.to), "k.cu");
  ASSERT_FALSE(spec.ok()) << bad.what << " was accepted";
  EXPECT_EQ(spec.error().kind, ErrorKind::KernelFile);
  EXPECT_EQ(spec.error().loc.file, "k.cu");
  EXPECT_EQ(spec.error().loc.line, bad.line) << spec.error().str();
  EXPECT_NE(spec.error().message.find(bad.message), std::string::npos) << spec.error().str();
}

const BadHeader kBadHeaders[] = {
    {"UnknownKey", "// tags: test", "// colour: red", 8, "unknown key 'colour'"},
    {"BadNumber", "= 1 2\n", "= 1 2x\n", 4, "bad number '2x'"},
    {"BadHexNumber", "= 1 2\n", "= 1 -0x2\n", 4, "bad number '-0x2'"},
    {"ValueOutOfRange", "= 1 2\n", "= 1 2147483648\n", 4, "out of range for i32"},
    {"NegativeUnsigned", "n scalar u32 = 2", "n scalar u32 = -2", 6, "out of range for u32"},
    {"ArraySizeMismatch", "= 1 2\n", "= 1 2 3\n", 4, "array size mismatch"},
    {"ExpectForNonOutput", "// expect: out = 3 4", "// expect: out = 3 4\n// expect: a = 1 2", 8,
     "non-output"},
    {"ExpectForUnknownParam", "// expect: out = 3 4", "// expect: out = 3 4\n// expect: zz = 1",
     8, "unknown param 'zz'"},
    {"ExpectSizeMismatch", "out = 3 4", "out = 3", 7, "expect size mismatch"},
    {"DuplicateExpect", "// expect: out = 3 4", "// expect: out = 3 4\n// expect: out = 3 4", 8,
     "duplicate expect"},
    {"MissingExpect", "// expect: out = 3 4\n", "", 5, "has no `expect:`"},
    {"MissingLaunch", "// launch: grid=1 block=4\n", "", 8, "missing `launch:`"},
    {"MissingSummary", "// summary: test kernel\n", "", 8, "missing `summary:`"},
    {"BlockOver16", "block=4", "block=17", 3, "block 17 out of range 1..16"},
    {"BlockZero", "block=4", "block=0", 3, "block 0 out of range"},
    {"GridOver16", "grid=1", "grid=17", 3, "grid 17 out of range 1..16"},
    {"LaunchWithoutBlock", "grid=1 block=4", "grid=1", 3, "needs both"},
    {"LaunchUnknownWord", "grid=1 block=4", "grid=1 block=4 warps=1", 3, "launch needs"},
    {"DuplicateParam", "// param: n scalar u32 = 2", "// param: a scalar u32 = 2", 6,
     "duplicate param 'a'"},
    {"DuplicateKey", "// tags: test", "// tags: test\n// summary: again", 9,
     "duplicate key 'summary'"},
    {"UnknownDirection", "a in i32", "a input i32", 4, "unknown param direction 'input'"},
    {"UnknownType", "a in i32[2]", "a in f32[2]", 4, "unknown type 'f32'"},
    {"ArrayWithoutSize", "out out i32[2]", "out out i32", 5, "needs a size"},
    {"ArraySizeZero", "out out i32[2]", "out out i32[0]", 5, "bad array size"},
    {"ArraySizeOver126", "out out i32[2]", "out out i32[127]", 5, "bad array size"},
    {"ScalarWithSize", "n scalar u32 = 2", "n scalar u32[1] = 2", 6, "cannot have a size"},
    {"InputWithoutValues", "a in i32[2] = 1 2", "a in i32[2]", 4, "needs values"},
    {"ScalarWithoutValue", "n scalar u32 = 2", "n scalar u32", 6, "needs values"},
    {"MissingEquals", "a in i32[2] = 1 2", "a in i32[2] : 1 2", 4, "expected '='"},
    {"MalformedHeaderLine", "// tags: test", "// tags test", 8, "`// key: value`"},
    {"NoSpaceAfterColon", "// tags: test", "// tags:test", 8, "space after"},
    {"EmptyValue", "// tags: test", "// tags:", 8, "empty value"},
    {"BadTag", "// tags: test", "// tags: Test!", 8, "bad tag"},
    {"FirstLineNotKernelName", "// qgpu-kernel: k", "// name: k", 1, "first line"},
    {"CompareMultisetOfInput", "compare: exact", "compare: multiset a", 9, "not an output"},
    {"CompareUnknownMode", "compare: exact", "compare: sorted", 9, "compare must be"},
    {"FunctionNameDiffers", "void k(", "void g(", 12, "__global__ void k("},
    {"TwoKernels", "__global__ void k(", "__global__ void h() {}\n__global__ void k(", 13,
     "exactly one __global__"},
    {"NoKernel", "__global__ void k(", "void k(", 10, "no __global__ function"},
    {"ParamNameDiffers", "const int* __restrict__ a,", "const int* __restrict__ b,", 4,
     "kernel's parameter 1 is 'b'"},
    {"ScalarDeclaredAsPointer", "unsigned n)", "unsigned* n)", 6, "declares it a pointer"},
    {"ArrayDeclaredByValue", "int* out,", "int out,", 5, "declares it by value"},
    {"TypeDiffers", "unsigned n)", "int n)", 6, "u32 but the kernel declares i32"},
    {"UnsupportedType", "unsigned n)", "float n)", 6, "unsupported type 'float'"},
    {"LaunchSharedOver126", "block=4", "block=4 shared=127", 3, "shared 127 out of range 0..126"},
    {"LaunchSharedTwice", "block=4", "block=4 shared=1 shared=2", 3, "twice"},
    {"ParamCountDiffers", "unsigned n)", "unsigned n, int m)", 12, "3 param lines"},
};

INSTANTIATE_TEST_SUITE_P(Headers, KernelParserRejects, ::testing::ValuesIn(kBadHeaders),
                         [](const auto& info) { return std::string(info.param.what); });

TEST(KernelParser, FileStemMustEqualKernelName) {
  auto dir = std::filesystem::temp_directory_path() / "qgpu-kernel-parser-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "other.cu") << kBase;
    std::ofstream(dir / "k.cu") << kBase;
  }
  auto wrong = parseKernelFile((dir / "other.cu").string());
  auto right = parseKernelFile((dir / "k.cu").string());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, ErrorKind::KernelFile);
  EXPECT_NE(wrong.error().message.find("must live in k.cu"), std::string::npos);
  EXPECT_TRUE(right.ok()) << right.error().str();
}

TEST(KernelParser, MissingFileIsIo) {
  auto spec = parseKernelFile("/nonexistent/k.cu");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().kind, ErrorKind::Io);
}

// ---- Layout ----

TEST(KernelLayout, ArraysAreConsecutiveAndPointersAreByteAddresses) {
  auto spec = parseKernelText(kBase, "k.cu");
  ASSERT_TRUE(spec.ok());
  auto image = layout(*spec);
  ASSERT_TRUE(image.ok()) << image.error().str();
  EXPECT_EQ(image->params, (std::vector<uint32_t>{0, 8, 2}));  // a at word 0, out at word 2, n
  ASSERT_EQ(image->arrays.size(), 2u);
  EXPECT_EQ(image->arrays[1].firstWord, 2u);
  EXPECT_EQ(image->arrays[1].words, 2u);
  EXPECT_EQ(image->usedWords, 4u);
  EXPECT_EQ(image->global[0], 1u);
  EXPECT_EQ(image->global[1], 2u);
  EXPECT_EQ(image->global[2], 0u);
  EXPECT_EQ(image->toMachineLaunch().blockX, 4u);
}

TEST(KernelLayout, ExactlyFullMemoryFits) {
  auto spec = parseKernelText(kBase, "k.cu");
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(setInput(*spec, "a", std::vector<int64_t>(124, 7)).ok());
  auto image = layout(*spec);
  ASSERT_TRUE(image.ok()) << image.error().str();
  EXPECT_EQ(image->usedWords, 126u);
}

TEST(KernelLayout, MoreThan126WordsIsOverLimit) {
  auto spec = parseKernelText(kBase, "k.cu");
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(setInput(*spec, "a", std::vector<int64_t>(125, 7)).ok());
  auto image = layout(*spec);
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().kind, ErrorKind::OverLimit);
}

// ---- Output checks ----

TEST(KernelCheck, MatchingMemoryHasNoDifferences) {
  auto spec = parseKernelText(kBase, "k.cu");
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[2] = 3;
  memory[3] = 4;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  EXPECT_TRUE(diffs->empty());
}

TEST(KernelCheck, WrongOutputIsReportedWithIndex) {
  auto spec = parseKernelText(kBase, "k.cu");
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[2] = 3;
  memory[3] = 5;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  ASSERT_EQ(diffs->size(), 1u);
  EXPECT_EQ((*diffs)[0], "out[1]: expected 4, got 5");
}

TEST(KernelCheck, ChangedInputIsReported) {
  auto spec = parseKernelText(kBase, "k.cu");
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[0] = 9;
  memory[2] = 3;
  memory[3] = 4;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  ASSERT_EQ(diffs->size(), 1u);
  EXPECT_NE((*diffs)[0].find("input a[0] changed"), std::string::npos);
}

TEST(KernelCheck, MultisetAcceptsAPermutation) {
  auto spec = parseKernelText(mutate("compare: exact", "compare: multiset out"), "k.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[2] = 4;
  memory[3] = 3;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  EXPECT_TRUE(diffs->empty());
}

TEST(KernelCheck, MultisetRejectsDifferentContents) {
  auto spec = parseKernelText(mutate("compare: exact", "compare: multiset out"), "k.cu");
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[2] = 4;
  memory[3] = 4;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  EXPECT_EQ(diffs->size(), 1u);
}

TEST(KernelCheck, ExactRejectsAPermutation) {
  auto spec = parseKernelText(kBase, "k.cu");
  auto image = layout(*spec);
  std::array<uint32_t, kGlobalWords> memory = image->global;
  memory[2] = 4;
  memory[3] = 3;
  auto diffs = checkOutputs(*spec, *image, memory);
  ASSERT_TRUE(diffs.ok());
  EXPECT_EQ(diffs->size(), 2u);
}

// ---- Programmatic inputs ----

TEST(KernelInputs, SetInputResizesAndClearsExpectations) {
  auto spec = parseKernelText(kBase, "k.cu");
  ASSERT_TRUE(setInput(*spec, "a", {5, 6, 7}).ok());
  EXPECT_EQ(spec->find("a")->init, (std::vector<uint32_t>{5, 6, 7}));
  EXPECT_FALSE(spec->find("out")->hasExpect);
  ASSERT_TRUE(setOutputSize(*spec, "out", 3).ok());
  EXPECT_EQ(spec->find("out")->init.size(), 3u);
  ASSERT_TRUE(setInput(*spec, "n", {3}).ok());
  EXPECT_EQ(spec->find("n")->init, std::vector<uint32_t>{3});
}

TEST(KernelInputs, RejectsWrongUse) {
  auto spec = parseKernelText(kBase, "k.cu");
  EXPECT_EQ(setInput(*spec, "zz", {1}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setInput(*spec, "out", {1}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setInput(*spec, "n", {1, 2}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setInput(*spec, "n", {-1}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setInput(*spec, "a", {int64_t{1} << 31}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setInput(*spec, "a", {}).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setOutputSize(*spec, "a", 2).error().kind, ErrorKind::Usage);
  EXPECT_EQ(setOutputSize(*spec, "out", 0).error().kind, ErrorKind::Usage);
  // The spec is unchanged by rejected calls.
  EXPECT_TRUE(spec->find("out")->hasExpect);
}

}  // namespace
}  // namespace qgpu::kernels
