// qgpu/kernels/signature.h — reads the one __global__ function of a kernel file's CUDA source: its
// name, its parameters and their C types, and, for a template kernel, the instantiation to run.
//
// Contract (the rules are in kernels/README.md, "The kernel's signature"):
// - Comments are ignored. Exactly one __global__ definition; an explicit instantiation
//   (`template __global__ void k<int, 4>(...);`) is not a second kernel.
// - `__launch_bounds__(...)` may stand before or after `void` or before the name; default
//   arguments are allowed (the header gives every value); `const`, `volatile`, `__restrict__`
//   are ignored; a parameter declared `T a[]` is a pointer.
// - Parameter types are read through one table (`cTypeTable()`): the 32-bit integer spellings
//   (int, unsigned, uint, int32_t, uint32_t, std::uint32_t, ...) are accepted, and so are
//   pointers to sub-word elements (bool, char, short, int8_t, ...: word-packed arrays, the
//   catalog checks the header's type), sub-word scalars by value, and pointers to CUDA's integer
//   vector types (int2, int4, uint2, uint4, uchar4, ...: arrays of their components); 64-bit
//   types and vectors by value are known but refused with PtxUnsupported naming the parameter,
//   its type and its line; anything else is a KernelFile error.
// - A template kernel runs the instantiation its file names: the header's `template:` value
//   (`reduce<int, 16>`) or the file's own single explicit instantiation; with a header value the
//   reader returns the explicit instantiation text to append to the source.
// Errors carry the file and the source line they are about.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::kernels {

// What the lowering can do with a C type (one row per spelling in cTypeTable()).
enum class CTypeClass : uint8_t {
  Word,     // a 32-bit integer: accepted
  SubWord,  // 8 or 16 bits: arrays accepted as word-packed memory; by value accepted
            // (ld.param.u8/s8/u16/s16 of the value's low bits)
  Wide,     // 64 bits (refused as a parameter: the machine's parameters are 32-bit words)
  Vector,   // int2/uint4/uchar4/...: arrays accepted as arrays of their components (32-bit
            // components as i32/u32 elements, 8/16-bit ones word-packed), aligned to the vector's
            // size; by value refused
};

struct CTypeRow {
  const char* spelling;  // normalised: words joined by one space, `std::` dropped
  CTypeClass cls;
  bool isSigned;
  uint8_t bits;  // element bits (vectors: per component)
  uint8_t components = 1;  // vectors: 2 or 4; scalars 1
  uint32_t bytes() const { return bits / 8u * components; }  // the C type's size (= a vector's alignment)
};

std::span<const CTypeRow> cTypeTable();
// The row for a spelling (normalised as above), or nullptr.
const CTypeRow* findCType(std::string_view spelling);

struct SignatureParam {
  std::string name;
  bool pointer = false;
  std::string type;      // the normalised C type after template substitution ("unsigned int")
  const CTypeRow* ctype = nullptr;  // nullptr: not in the table
  uint32_t line = 0;     // source line of the declaration
};

struct KernelSignature {
  std::string name;
  uint32_t line = 0;                    // line of the __global__ definition
  std::vector<SignatureParam> params;
  bool isTemplate = false;
  std::string instantiation;            // "reduce<int, 16>" for a template kernel
  std::string appendInstantiation;      // text to append to the source (header-named only)
};

// `name` is the kernel's name (the header's); `templateHeader` is the header's `template:` value (empty if none), `headerLine` its line;
// `bodyLine` is the first line after the header (where "no __global__ function" is reported).
Expected<KernelSignature> readSignature(std::string_view source, const std::string& file,
                                        const std::string& name, std::string_view templateHeader, uint32_t headerLine,
                                        uint32_t bodyLine);

}  // namespace qgpu::kernels
