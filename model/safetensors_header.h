// qgpu/model/safetensors_header.h — the safetensors header parser (torch-free, fuzzed).
//
// A safetensors file is: 8 bytes little-endian N, then N bytes of UTF-8 JSON, then the data
// section. The JSON maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data section) plus an optional "__metadata__" object of string → string.
//
// Contract: `parseSafetensors` accepts any byte span and either returns a header whose every tensor
// lies inside the data section, whose byte size equals product(shape) * dtype size, and whose
// tensors, in offset order, tile the data section exactly (no gap, no overlap, no trailing byte:
// Hugging Face's reader refuses each) — or a Diag (kind Checkpoint) naming the file and, where one
// is at fault, the tensor. A key repeated in any JSON object of the header is refused. It never reads outside the span and never throws. Nothing here allocates more
// than a small multiple of the input size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::model {

// Storage dtypes a safetensors file may name. The runtime computes with F32 and BF16 only; the
// others parse (so that a header is validated whole) and are rejected when loaded as weights.
enum class StDtype : uint8_t {
  F64,   // IEEE binary64
  F32,   // IEEE binary32
  F16,   // IEEE binary16
  BF16,  // bfloat16 (top half of a binary32)
  I64,   // signed 64-bit integer
  I32,   // signed 32-bit integer
  I16,   // signed 16-bit integer
  I8,    // signed 8-bit integer
  U8,    // unsigned 8-bit integer
  BOOL,  // one byte, 0 or 1
};

const char* stDtypeName(StDtype dtype);
std::optional<StDtype> stDtypeFromName(std::string_view name);
uint64_t stDtypeSize(StDtype dtype);

struct StTensorInfo {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offset of the first element, relative to the data section
  uint64_t end = 0;    // one past the last byte, relative to the data section

  uint64_t numel() const;
  uint64_t bytes() const { return end - begin; }
};

struct StHeader {
  std::vector<StTensorInfo> tensors;  // in file order of their data (sorted by `begin`)
  std::map<std::string, std::string> metadata;
  uint64_t dataStart = 0;  // absolute file offset of the data section: 8 + N
  uint64_t dataBytes = 0;  // size of the data section

  const StTensorInfo* find(std::string_view name) const;
};

// Upper bound on the JSON header, as in the reference implementation (100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Parses and validates the header of a whole safetensors file held in `bytes`. `fileName` only
// labels errors.
Expected<StHeader> parseSafetensors(std::span<const uint8_t> bytes, const std::string& fileName);

// Same, given only the JSON text and the size of the data section that follows it (for readers that
// map the file lazily). `dataStart` is recorded as 8 + json.size().
Expected<StHeader> parseSafetensorsJson(std::string_view json, uint64_t dataBytes,
                                        const std::string& fileName);

}  // namespace qgpu::model
