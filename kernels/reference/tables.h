// qgpu/kernels/reference/tables.h — private: each ref_*.cpp adds its kernels' references.
// Explicit registration calls (not static initialisers) so that nothing is dropped by the linker.
#pragma once

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

}  // namespace qgpu::kernels::ref
