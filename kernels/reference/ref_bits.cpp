// qgpu/kernels/reference/ref_bits.cpp — references: bit intrinsics, division, select and clamp.
#include <bit>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void popcount(RefArgs& r) {
  auto &x = r.a("x"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) out[t] = std::popcount(static_cast<uint32_t>(x[t]));
}

}  // namespace

void addBitKernels(Table& t) {
  t["popcount"] = popcount;
}

}  // namespace qgpu::kernels::ref
