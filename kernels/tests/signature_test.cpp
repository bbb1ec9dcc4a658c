// qgpu/kernels/tests/signature_test.cpp — the kernel file's __global__ signature as people write
// it: typedef'd and fixed-width types, default arguments, __launch_bounds__, template kernels and
// their instantiation; sub-word arrays as word-packed u32; sub-word scalars by value with their
// range; vector arrays as arrays of components, laid out at their alignment; 64-bit arrays as
// word pairs at a multiple of 8 bytes; vectors and 64-bit scalars by value refused with the
// source line; the launch line's `shared=W` (label cpu).
#include "kernels/signature.h"

#include <gtest/gtest.h>

#include "kernels/catalog.h"

namespace qgpu::kernels {
namespace {

// Header lines 1..6, then the extra header line if any, a blank line, the source (line 8, or 9).
std::string kernelFile(const std::string& extraHeader, const std::string& body,
                       const std::string& types = "i32 i32 u32") {
  std::string t[3];
  size_t k = 0;
  for (size_t at = 0; at <= types.size() && k < 3;) {
    size_t sp = types.find(' ', at);
    if (sp == std::string::npos) sp = types.size();
    t[k++] = types.substr(at, sp - at);
    at = sp + 1;
  }
  return "// qgpu-kernel: k\n"
         "// summary: test kernel\n"
         "// launch: grid=1 block=4\n"
         "// param: a in " + t[0] + "[2] = 1 2\n"
         "// param: out out " + t[1] + "[2]\n"
         "// param: n scalar " + t[2] + " = 2\n" +
         extraHeader + "\n" + body;
}

Expected<KernelSpec> parse(const std::string& text) {
  return parseKernelTextWithoutExpect(text, "k.cu");
}

TEST(KernelSignature, AcceptsFixedWidthAndTypedefNames) {
  auto spec = parse(kernelFile("", "__global__ void k(const std::int32_t* a, int32_t* out, uint32_t n) {}\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto spec2 = parse(kernelFile("", "__global__ void k(const uint* a, unsigned int* out, unsigned n) {}\n",
                                "u32 u32 u32"));
  ASSERT_TRUE(spec2.ok()) << spec2.error().str();
  EXPECT_EQ(spec2->params[0].type, ElemType::U32);
}

TEST(KernelSignature, AcceptsSubwordArraysAsWordPackedU32) {
  // Every 8/16-bit element spelling, as a pointer or `T a[]`, on its own line or not; the header
  // writes the array as u32 words (kernels/README.md).
  for (const char* type : {"bool", "char", "signed char", "unsigned char", "uchar", "int8_t", "uint8_t",
                           "short", "unsigned short", "ushort", "int16_t", "std::uint16_t"}) {
    auto spec = parse(kernelFile("", std::string("__global__ void k(\n    const ") + type +
                                         "* a,\n int* out, unsigned n) {}\n",
                                 "u32 i32 u32"));
    EXPECT_TRUE(spec.ok()) << type << ": " << spec.error().str();
  }
  auto brackets = parse(kernelFile("", "__global__ void k(unsigned char a[], bool out[], unsigned n) {}\n",
                                   "u32 u32 u32"));
  EXPECT_TRUE(brackets.ok()) << brackets.error().str();
}

TEST(KernelSignature, SignednessIsCheckedThroughTheTypedef) {
  auto spec = parse(kernelFile("", "__global__ void k(const int* a, int* out, int32_t n) {}\n"));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().kind, ErrorKind::KernelFile);
  EXPECT_NE(spec.error().message.find("u32 but the kernel declares i32 ('int32_t')"), std::string::npos)
      << spec.error().str();
}

TEST(KernelSignature, AcceptsDefaultArgumentsAndLaunchBoundsAnywhere) {
  for (const char* head : {"__global__ void __launch_bounds__(16, 1) k(",
                           "__global__ __launch_bounds__(16) void k(",
                           "__launch_bounds__(16) __global__ void k("}) {
    auto spec = parse(kernelFile("", std::string(head) + "const int* a, int* out, unsigned n = (4)) {}\n"));
    EXPECT_TRUE(spec.ok()) << head << ": " << spec.error().str();
  }
}

TEST(KernelSignature, IgnoresKernelsInComments) {
  auto spec = parse(kernelFile("", "// __global__ void other() {}\n/* __global__ void x(); */\n"
                                   "__global__ void k(int* a, int* out, unsigned n) {}\n"));
  EXPECT_TRUE(spec.ok()) << spec.error().str();
}

const std::string kTemplate =
    "template <class T, unsigned B = 4>\n"
    "__global__ void k(const T* __restrict__ a, T* out, unsigned n) { out[0] = a[0] + B; }\n";

TEST(KernelSignature, ExplicitInstantiationIsNotASecondKernel) {
  auto spec = parse(kernelFile("", kTemplate +
                                       "template __global__ void k<int, 8>(const int*, int*, unsigned);\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->instantiation, "k<int, 8>");
  EXPECT_EQ(spec->source.find("qgpu: the instantiation"), std::string::npos);  // nothing appended
}

TEST(KernelSignature, TemplateHeaderAppendsTheInstantiation) {
  auto spec = parse(kernelFile("// template: k<unsigned>\n", kTemplate, "u32 u32 u32"));
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->instantiation, "k<unsigned, 4>");  // B from its default
  EXPECT_NE(spec->source.find("template __global__ void k<unsigned, 4>(const unsigned* __restrict__, "
                              "unsigned*, unsigned);"),
            std::string::npos)
      << spec->source;
}

TEST(KernelSignature, TemplateArgumentsDecideTheElementType) {
  auto spec = parse(kernelFile("// template: k<int, 2>\n", kTemplate, "u32 u32 u32"));
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().message.find("u32 but the kernel declares i32"), std::string::npos)
      << spec.error().str();
}

TEST(KernelSignature, AcceptsSubWordScalarsByValueAndVectorArrays) {
  for (const char* decl : {"uint8_t n", "unsigned char n", "unsigned short n", "const uchar n"}) {
    auto spec = parse(kernelFile("", std::string("__global__ void k(const int* a, int* out, ") + decl + ") {}\n"));
    EXPECT_TRUE(spec.ok()) << decl << ": " << spec.error().str();
  }
  for (const char* decl : {"char n", "short n", "int16_t n", "signed char n"}) {
    auto spec = parse(kernelFile("", std::string("__global__ void k(const int* a, int* out, ") + decl + ") {}\n",
                                 "i32 i32 i32"));
    EXPECT_TRUE(spec.ok()) << decl << ": " << spec.error().str();
  }
  // a holds 2 words: one int2, 2 uchar4, 4 uchar2, 1 short4, 2 ushort2 (bool by value: below).
  for (const char* decl : {"const int2* a", "const uchar4* a", "const uchar2* a", "const short4* a", "ushort2 a[]"}) {
    auto spec = parse(kernelFile("", std::string("__global__ void k(") + decl + ", int* out, unsigned n) {}\n",
                                 std::string(decl).find("int2") != std::string::npos ? "i32 i32 u32" : "u32 i32 u32"));
    EXPECT_TRUE(spec.ok()) << decl << ": " << spec.error().str();
  }
}

// A file whose scalar n has the value `value` and the C type `type`.
std::string scalarFile(const std::string& type, const std::string& elem, const std::string& value) {
  return "// qgpu-kernel: k\n// summary: s\n// launch: grid=1 block=1\n// param: out out i32[1]\n"
         "// param: n scalar " + elem + " = " + value + "\n\n__global__ void k(int* out, " + type + " n) {}\n";
}

TEST(KernelSignature, SubWordScalarValuesMustFitTheirCType) {
  struct Row {
    const char* type;
    const char* elem;
    const char* ok;   // the extreme values that fit
    const char* bad;  // one past them
  };
  const Row rows[] = {{"char", "i32", "-128", "128"},           {"char", "i32", "127", "-129"},
                      {"unsigned char", "u32", "255", "256"},   {"bool", "u32", "1", "2"},
                      {"short", "i32", "-32768", "32768"},      {"uint16_t", "u32", "65535", "0x10000"},
                      {"signed char", "i32", "0xffffff80", "0x80"}};
  for (const Row& r : rows) {
    auto good = parse(scalarFile(r.type, r.elem, r.ok));
    EXPECT_TRUE(good.ok()) << r.type << " = " << r.ok << ": " << good.error().str();
    auto bad = parse(scalarFile(r.type, r.elem, r.bad));
    ASSERT_FALSE(bad.ok()) << r.type << " = " << r.bad << " was accepted";
    EXPECT_EQ(bad.error().kind, ErrorKind::KernelFile);
    EXPECT_EQ(bad.error().loc.line, 5u) << bad.error().str();
    EXPECT_NE(bad.error().message.find("does not fit the kernel's '" + std::string(r.type) + "'"), std::string::npos)
        << bad.error().str();
  }
}

TEST(KernelLayout, VectorArraysStartAtAMultipleOfTheirSize) {
  // a: 3 words at 0; v (int4*): 8 words, aligned up from word 3 to word 4; w (int2*): 2 words,
  // from word 12 (already a multiple of 2); c (uchar4*): 1 word at 14. Words 3 is a gap.
  auto spec = parse("// qgpu-kernel: k\n// summary: s\n// launch: grid=1 block=1\n"
                    "// param: a in i32[3] = 1 2 3\n// param: v in i32[8] = 1 2 3 4 5 6 7 8\n"
                    "// param: w out i32[2]\n// param: c in u32[1] = 0x01020304\n\n"
                    "__global__ void k(const int* a, const int4* v, int2* w, const uchar4* c) {}\n");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto image = layout(*spec);
  ASSERT_TRUE(image.ok()) << image.error().str();
  ASSERT_EQ(image->params.size(), 4u);
  EXPECT_EQ(image->params[0], 0u);
  EXPECT_EQ(image->params[1], 16u);  // byte address of word 4
  EXPECT_EQ(image->params[2], 48u);  // word 12
  EXPECT_EQ(image->params[3], 56u);  // word 14
  EXPECT_EQ(image->global[3], 0u);   // the gap
  EXPECT_EQ(image->global[4], 1u);
  EXPECT_EQ(image->usedWords, 15u);
}

TEST(KernelLayout, SixtyFourBitArraysAreWordPairsAtAMultipleOfEightBytes) {
  // a: 3 words at 0; w (long long*): 4 words (2 elements) aligned up from word 3 to word 4;
  // u (uint64_t*): 2 words at word 8; the low word of each element first, as given.
  auto spec = parse("// qgpu-kernel: k\n// summary: s\n// launch: grid=1 block=1\n"
                    "// param: a in i32[3] = 1 2 3\n// param: w in u32[4] = 0xffffffff 1 5 0x80000000\n"
                    "// param: u out u32[2]\n\n"
                    "__global__ void k(const int* a, const long long* w, unsigned long long* u) {}\n");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto image = layout(*spec);
  ASSERT_TRUE(image.ok()) << image.error().str();
  ASSERT_EQ(image->params.size(), 3u);
  EXPECT_EQ(image->params[1], 16u);  // byte address of word 4
  EXPECT_EQ(image->params[2], 32u);  // word 8
  EXPECT_EQ(image->global[3], 0u);   // the gap
  EXPECT_EQ(image->global[4], 0xffffffffu);
  EXPECT_EQ(image->global[5], 1u);
  EXPECT_EQ(image->usedWords, 10u);
  for (const char* type : {"long", "long int", "unsigned long", "long long int", "int64_t", "std::uint64_t", "size_t"}) {
    auto other = parse("// qgpu-kernel: k\n// summary: s\n// launch: grid=1 block=1\n// param: w inout u32[2]\n\n"
                       "__global__ void k(" + std::string(type) + "* w) {}\n");
    EXPECT_TRUE(other.ok()) << type << ": " << other.error().str();
  }
  // The failing twin: an odd number of words is not whole elements.
  auto odd = parse("// qgpu-kernel: k\n// summary: s\n// launch: grid=1 block=1\n// param: w inout u32[3]\n\n"
                   "__global__ void k(long long* w) {}\n");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().kind, ErrorKind::KernelFile);
  EXPECT_NE(odd.error().message.find("has 3 words but a 'long long' array needs an even number"), std::string::npos)
      << odd.error().str();
}

struct BadSignature {
  const char* what;
  std::string header;
  std::string body;
  ErrorKind kind;
  uint32_t line;
  const char* message;
};

class KernelSignatureRejects : public ::testing::TestWithParam<BadSignature> {};

TEST_P(KernelSignatureRejects, WithKindLineAndMessage) {
  const BadSignature& bad = GetParam();
  auto spec = parse(kernelFile(bad.header, bad.body));
  ASSERT_FALSE(spec.ok()) << bad.what << " was accepted";
  EXPECT_EQ(spec.error().kind, bad.kind) << spec.error().str();
  EXPECT_EQ(spec.error().loc.file, "k.cu");
  EXPECT_EQ(spec.error().loc.line, bad.line) << spec.error().str();
  EXPECT_NE(spec.error().message.find(bad.message), std::string::npos) << spec.error().str();
}

const std::string kInst = "template __global__ void k<int>(const int*, int*, unsigned);\n";

const BadSignature kBadSignatures[] = {
    {"TemplateWithoutInstantiation", "", kTemplate, ErrorKind::KernelFile, 9, "needs the instantiation"},
    {"TemplateHeaderOnPlainKernel", "// template: k<int>\n",
     "__global__ void k(int* a, int* out, unsigned n) {}\n", ErrorKind::KernelFile, 7, "not a template"},
    {"InstantiationOfPlainKernel", "",
     "__global__ void k(int* a, int* out, unsigned n) {}\n" + kInst, ErrorKind::KernelFile, 9,
     "not a template kernel"},
    {"TwoInstantiations", "", kTemplate + kInst + kInst, ErrorKind::KernelFile, 11,
     "instantiates one kernel"},
    {"HeaderAndOwnInstantiation", "// template: k<int>\n", kTemplate + kInst, ErrorKind::KernelFile,
     7, "give one"},
    {"MalformedTemplateHeader", "// template: reduce<int>\n", kTemplate, ErrorKind::KernelFile, 7,
     "`template:` must be `k<ARGS>`"},
    {"TooManyTemplateArguments", "// template: k<int, 1, 2>\n", kTemplate, ErrorKind::KernelFile, 7,
     "2 template parameters but 3"},
    {"InstantiationWithoutArguments", "",
     kTemplate + "template __global__ void k(const int*, int*, unsigned);\n", ErrorKind::KernelFile,
     10, "must name its template arguments"},
    {"BoolArrayWrittenAsI32", "", "\n__global__ void k(const bool* a, int* out, unsigned n) {}\n",
     ErrorKind::KernelFile, 4, "'bool' array is word-packed 8-bit elements: write it as u32 words"},
    {"VectorByValue", "", "__global__ void k(int* a, int* out, uint2 n) {}\n", ErrorKind::PtxUnsupported,
     8, "parameter 'n' of type 'uint2' (32-bit vector elements) is a vector passed by value"},
    {"VectorArrayNotWholeVectors", "", "__global__ void k(const int4* a, int* out, unsigned n) {}\n",
     ErrorKind::KernelFile, 4, "has 2 words but a 'int4' array needs a multiple of 4 (16-byte vectors)"},
    {"VectorArrayOfTheOtherSignedness", "", "__global__ void k(const uint2* a, int* out, unsigned n) {}\n",
     ErrorKind::KernelFile, 4, "an array of u32 components: write it as u32"},
    {"ByteVectorArrayWrittenAsI32", "", "__global__ void k(const char4* a, int* out, unsigned n) {}\n",
     ErrorKind::KernelFile, 4, "word-packed 8-bit components: write it as u32 words"},
    {"WideScalar", "", "__global__ void k(int* a, int* out, unsigned long long n) {}\n",
     ErrorKind::PtxUnsupported, 8, "is 64-bit by value"},
    {"WideArrayWrittenAsI32", "", "__global__ void k(const long long* a, int* out, unsigned n) {}\n",
     ErrorKind::KernelFile, 4, "'long long' array is word-packed 64-bit elements: write it as u32 words"},
    {"TemplateSubWordWrittenAsI32", "// template: k<char>\n", kTemplate, ErrorKind::KernelFile, 4,
     "'char' array is word-packed"},
    {"ShortScalarWrittenAsU32", "", "__global__ void k(int* a, int* out, short n) {}\n", ErrorKind::KernelFile,
     6, "param 'n' is u32 but the kernel declares i32 ('short')"},
    {"Reference", "", "__global__ void k(int* a, int* out, unsigned& n) {}\n", ErrorKind::KernelFile, 8,
     "is a reference"},
    {"UnknownType", "", "__global__ void k(float* a, int* out, unsigned n) {}\n", ErrorKind::KernelFile, 4,
     "unsupported type 'float'"},
};

INSTANTIATE_TEST_SUITE_P(Signatures, KernelSignatureRejects, ::testing::ValuesIn(kBadSignatures),
                         [](const auto& info) { return std::string(info.param.what); });

TEST(KernelSignature, EveryTableSpellingIsFound) {
  for (const CTypeRow& row : cTypeTable()) EXPECT_EQ(findCType(row.spelling), &row) << row.spelling;
  EXPECT_EQ(findCType("float"), nullptr);
}

TEST(KernelLaunch, SharedWordsReachTheLaunchImage) {
  std::string text = kernelFile("", "__global__ void k(int* a, int* out, unsigned n) {}\n");
  text.replace(text.find("block=4"), 7, "block=4 shared=16");
  auto spec = parse(text);
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->dynamicSharedWords, 16u);
  for (auto& p : spec->params) p.hasExpect = true, p.expect = p.init;
  auto image = layout(*spec);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->dynamicSharedWords, 16u);
}

TEST(KernelLaunch, SharedDefaultsToZero) {
  auto spec = parse(kernelFile("", "__global__ void k(int* a, int* out, unsigned n) {}\n"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->dynamicSharedWords, 0u);
}

}  // namespace
}  // namespace qgpu::kernels
