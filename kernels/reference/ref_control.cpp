// qgpu/kernels/reference/ref_control.cpp — references: branches, loops, calls, sorting.
#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void gcd(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t x = a[t], y = b[t];
    while (y != 0) {
      int32_t rem = x % y;
      x = y;
      y = rem;
    }
    out[t] = x;
  }
}

}  // namespace

void addControlKernels(Table& t) {
  t["gcd"] = gcd;
}

}  // namespace qgpu::kernels::ref
