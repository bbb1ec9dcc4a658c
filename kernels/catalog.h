// qgpu/kernels/catalog.h — the kernel catalog: CUDA kernels with their launch, inputs and expected
// outputs in a strict, line-based header (format: kernels/README.md).
//
// Contract:
// - `parseKernelText` / `parseKernelFile` read one catalog file. Every error is ErrorKind::KernelFile
//   with file:line and what is wrong; a spec that parses is internally consistent (parameter lines
//   match the __global__ signature 1:1, array sizes match their values, outputs have expectations).
// - `layout` places the arrays in the machine's 126-word global memory, consecutively in parameter
//   order from word 0, each at a multiple of its `alignWords` (vector-typed arrays; the skipped
//   words stay 0 and belong to no array); a pointer parameter's value is the BYTE address
//   (4 x first word). Over 126 words -> OverLimit.
// - Values are 32-bit words (bit patterns); `ElemType` only says how they are written and read back.
// - Expected values come from the plain C++ references in kernels/reference/, never from a qgpu leg.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::kernels {

inline constexpr uint32_t kGlobalWords = machine::kGlobalWords;          // 126
inline constexpr uint32_t kMaxBlockThreads = machine::kMaxThreadsPerBlock;  // 16
inline constexpr uint32_t kMaxGrid = machine::kMaxGridBlocks;               // 16
inline constexpr uint32_t kSharedWords = static_cast<uint32_t>(machine::kSharedWords);  // 126
// A kernel file larger than this is refused unread (common/file.h); the catalog's are under 2 KiB.
inline constexpr size_t kMaxKernelFileBytes = size_t{1} << 20;

enum class ParamKind : uint8_t {
  In,      // array read by the kernel; initial values required
  Out,     // array written by the kernel; starts as zeros unless values are given; has `expect`
  InOut,   // array read and written; initial values given (zeros if omitted); has `expect`
  Scalar,  // a by-value int/unsigned parameter; exactly one value
};

enum class ElemType : uint8_t {
  I32,  // int: values written and printed signed
  U32,  // unsigned int
};

const char* paramKindName(ParamKind kind);  // "in" / "out" / "inout" / "scalar"
const char* elemTypeName(ElemType type);    // "i32" / "u32"

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::In;
  ElemType type = ElemType::I32;
  std::vector<uint32_t> init;    // initial words; arrays: one per element; scalars: one
  bool hasExpect = false;        // Out/InOut only
  std::vector<uint32_t> expect;  // expected final words (same size as init)
  uint32_t line = 0;             // header line of the `param:` entry, for messages
  uint32_t alignWords = 1;       // arrays: layout puts the first word at a multiple of this
                                 // (a vector type's size in words: 2 for int2, 4 for int4)

  bool isArray() const { return kind != ParamKind::Scalar; }
  bool isOutput() const { return kind == ParamKind::Out || kind == ParamKind::InOut; }
};

struct KernelSpec {
  std::string name;                      // == the __global__ function's name == the file's stem
  std::string summary;                   // one line
  std::string path;                      // file it was read from (or the name given to parse)
  uint32_t gridX = 1;                    // CTAs, 1..16
  uint32_t blockX = 1;                   // threads per CTA, 1..16
  uint32_t dynamicSharedWords = 0;       // `shared=W`: words of `extern __shared__` memory
  std::string instantiation;             // a template kernel's, "reduce<int, 16>"; else empty
  std::vector<ParamSpec> params;         // in the kernel's parameter order
  std::vector<std::string> tags;         // free words for selection (`--tags atomics`)
  std::vector<std::string> multiset;     // outputs compared as multisets; the rest exactly
  std::vector<std::string> notes;        // `note:` lines
  std::string source;                    // the whole .cu text, header included; for a kernel
                                         // whose `template:` line names the instantiation, the
                                         // explicit instantiation is appended after it

  const ParamSpec* find(std::string_view paramName) const;
  ParamSpec* find(std::string_view paramName);
  bool hasTag(std::string_view tag) const;
  bool isMultiset(std::string_view paramName) const;
};

Expected<KernelSpec> parseKernelText(std::string_view text, const std::string& fileName);
// For the tool that (re)generates expectations: as parseKernelText, but outputs may lack `expect:`.
Expected<KernelSpec> parseKernelTextWithoutExpect(std::string_view text,
                                                  const std::string& fileName);
// Also checks that the file's stem equals the kernel's name. The file is read by readInputFile
// (common/file.h): a directory, FIFO or device, or a file over kMaxKernelFileBytes, is an Io error.
Expected<KernelSpec> parseKernelFile(const std::string& path);
// Every *.cu in `dir`, sorted by name; names must be unique. The first error stops the load.
Expected<std::vector<KernelSpec>> loadCatalog(const std::string& dir);
// The catalog shipped with the source tree (QGPU_SOURCE_DIR/kernels/catalog).
std::string defaultCatalogDir();

// ---- Memory layout ----
struct ArrayRange {
  size_t param = 0;       // index into KernelSpec::params
  uint32_t firstWord = 0;
  uint32_t words = 0;
};

struct LaunchImage {
  uint32_t gridX = 1;
  uint32_t blockX = 1;
  uint32_t dynamicSharedWords = 0;              // the launch's `extern __shared__` words
  std::array<uint32_t, kGlobalWords> global{};  // initial global memory
  std::vector<uint32_t> params;                 // one value per kernel parameter, in order
  std::vector<ArrayRange> arrays;               // one per array parameter, in parameter order
  uint32_t usedWords = 0;                       // words taken by arrays, from word 0

  machine::Launch toMachineLaunch() const;
};

Expected<LaunchImage> layout(const KernelSpec& spec);

// Compares a final global memory image with the expectations: outputs exactly or as multisets
// (`compare: multiset`), and input arrays unchanged. Returns one line per difference; empty means
// the run matches. Usage error if the spec has outputs without expectations.
Expected<std::vector<std::string>> checkOutputs(const KernelSpec& spec, const LaunchImage& image,
                                                std::span<const uint32_t> finalGlobal);

// ---- Programmatic inputs (the CLI's expression mode) ----
// Replaces the values (and, for arrays, the size) of an In/InOut array or a Scalar. Clears every
// expectation of the spec: they no longer hold (kernels/reference recomputes them).
Status setInput(KernelSpec& spec, std::string_view paramName, const std::vector<int64_t>& values);
// Resizes an Out array (zeros). Clears every expectation.
Status setOutputSize(KernelSpec& spec, std::string_view paramName, uint32_t count);

// ---- Printing ----
std::string formatValue(uint32_t word, ElemType type);  // "-3" / "4294967293"
std::string formatValues(const std::vector<uint32_t>& words, ElemType type);  // space-separated

}  // namespace qgpu::kernels
