// Fuzzes the safetensors header parser (model/safetensors_header.h) on arbitrary bytes: it must
// return a header or a Diag, never crash, hang or read outside the input. Accepted headers are
// re-checked against the parser's own contract.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto header = qgpu::model::parseSafetensors(std::span<const uint8_t>(data, size), "fuzz");
  if (!header.ok()) return 0;
  // The tensors tile the data section exactly, in order (as Hugging Face's reader requires).
  uint64_t prevEnd = 0;
  for (const auto& t : header->tensors) {
    if (t.end > header->dataBytes || t.begin > t.end) std::abort();
    if (t.numel() * qgpu::model::stDtypeSize(t.dtype) != t.bytes()) std::abort();
    if (t.begin != prevEnd) std::abort();
    prevEnd = t.end;
  }
  if (prevEnd != header->dataBytes) std::abort();
  if (header->dataStart + header->dataBytes != size) std::abort();
  return 0;
}
