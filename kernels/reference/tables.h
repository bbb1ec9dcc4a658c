// qgpu/kernels/reference/tables.h — private: each ref_*.cpp adds its kernels' references.
// Explicit registration calls (not static initialisers) so that nothing is dropped by the linker.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/reference/reference.h"

namespace qgpu::kernels::ref {

using Table = std::map<std::string, ReferenceFn, std::less<>>;

void addVectorKernels(Table& table);     // ref_vector.cpp: element-wise, normal mode, matrices
void addReductionKernels(Table& table);  // ref_reduce.cpp: dot, scans, histograms, min/max
void addBitKernels(Table& table);        // ref_bits.cpp: bit intrinsics, division, select
void addControlKernels(Table& table);    // ref_control.cpp: branches, loops, calls, sorting
void addSyncKernels(Table& table);       // ref_sync.cpp: atomics, warp votes and shuffles
void addIdiomKernels(Table& table);     // ref_idioms.cpp: public-code idioms (intrinsics, templates,
                                         // dynamic shared, cooperative groups, fences)
void addSubwordKernels(Table& table);    // ref_subword.cpp: byte/bool/halfword arrays, vectors
void addArithKernels(Table& table);      // ref_arith.cpp: long long, short and char arithmetic
void addPublicKernels(Table& table);     // ref_public.cpp: public-code idioms, second batch

// Helpers the references share. Word-packed arrays (kernels/README.md): element i of an array of
// `bits`-bit elements (8 or 16) lies in word i / (32 / bits), little-endian; a `long long` array
// holds element i in words 2i (low) and 2i + 1 (high).
inline uint32_t u(int32_t v) { return static_cast<uint32_t>(v); }
inline int32_t s(uint32_t v) { return static_cast<int32_t>(v); }
inline uint32_t getPacked(const std::vector<int32_t>& words, uint32_t i, uint32_t bits) {
  const uint32_t per = 32 / bits, mask = (1u << bits) - 1;
  return (u(words[i / per]) >> (bits * (i % per))) & mask;
}
inline void setPacked(std::vector<int32_t>& words, uint32_t i, uint32_t bits, uint32_t value) {
  const uint32_t per = 32 / bits, mask = (1u << bits) - 1, shift = bits * (i % per);
  uint32_t w = u(words[i / per]);
  w = (w & ~(mask << shift)) | ((value & mask) << shift);
  words[i / per] = s(w);
}
// A byte or halfword as the signed C type reads it.
inline int32_t signedField(uint32_t v, uint32_t bits) {
  return v >> (bits - 1) ? static_cast<int32_t>(v) - static_cast<int32_t>(1u << bits) : static_cast<int32_t>(v);
}
inline uint64_t pairAt(const std::vector<int32_t>& words, uint32_t i) {
  return u(words[2 * i]) | static_cast<uint64_t>(u(words[2 * i + 1])) << 32;
}
inline void setPair(std::vector<int32_t>& words, uint32_t i, uint64_t v) {
  words[2 * i] = s(static_cast<uint32_t>(v));
  words[2 * i + 1] = s(static_cast<uint32_t>(v >> 32));
}

}  // namespace qgpu::kernels::ref
