// qgpu/kernels/reference/ref_vector.cpp — references: element-wise, normal mode, matrices.
#include <algorithm>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void vadd(RefArgs& r) {
  auto &u = r.a("u"), &v = r.a("v"), &out = r.a("out");
  for (int i = 0; i < r.s("n"); ++i) out[i] = wrapAdd(u[i], v[i]);
}

void vsub(RefArgs& r) {
  auto &u = r.a("u"), &v = r.a("v"), &out = r.a("out");
  for (int i = 0; i < r.s("n"); ++i) out[i] = wrapSub(u[i], v[i]);
}

void vscale(RefArgs& r) {
  auto &v = r.a("v"), &out = r.a("out");
  for (int i = 0; i < r.s("n"); ++i) out[i] = wrapMul(r.s("k"), v[i]);
}

void matmul(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &c = r.a("c");
  const int n = r.s("n");
  for (int row = 0; row < n; ++row) {
    for (int col = 0; col < n; ++col) {
      int32_t sum = 0;
      for (int k = 0; k < n; ++k) sum = wrapAdd(sum, wrapMul(a[row * n + k], b[k * n + col]));
      c[row * n + col] = sum;
    }
  }
}

void matvec(RefArgs& r) {
  auto &a = r.a("a"), &x = r.a("x"), &y = r.a("y");
  const int m = r.s("m"), n = r.s("n");
  for (int row = 0; row < m; ++row) {
    int32_t sum = 0;
    for (int k = 0; k < n; ++k) sum = wrapAdd(sum, wrapMul(a[row * n + k], x[k]));
    y[row] = sum;
  }
}

// Square matrix product of a fixed size (matmul2x2 / 3x3 / 4x4).
template <int N>
void matmulFixed(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &c = r.a("c");
  for (int row = 0; row < N; ++row) {
    for (int col = 0; col < N; ++col) {
      int32_t sum = 0;
      for (int k = 0; k < N; ++k) sum = wrapAdd(sum, wrapMul(a[row * N + k], b[k * N + col]));
      c[row * N + col] = sum;
    }
  }
}


void vaddBlocks(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &out = r.a("out");
  for (int i = 0; i < r.s("n") && i < static_cast<int>(r.threads()); ++i) out[i] = wrapAdd(a[i], b[i]);
}

void saxpy(RefArgs& r) {
  auto &x = r.a("x"), &y = r.a("y");
  for (uint32_t i = 0; i < r.threads(); ++i) y[i] = wrapAdd(wrapMul(r.s("a"), x[i]), y[i]);
}

// out (cols x rows) = transpose of in (rows x cols).
template <int Rows, int Cols>
void transposeFixed(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (int row = 0; row < Rows; ++row) {
    for (int col = 0; col < Cols; ++col) out[col * Rows + row] = in[row * Cols + col];
  }
}

void stencil3(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const int n = static_cast<int>(r.blockX);
  auto at = [&](int i) { return in[std::clamp(i, 0, n - 1)]; };
  for (int t = 0; t < n; ++t) out[t] = at(t - 1) + 2 * at(t) + at(t + 1);
}

void reverse(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const int n = r.s("n");
  for (int t = 0; t < n; ++t) out[n - 1 - t] = in[t];
}

void rotateArray(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const int n = r.s("n"), k = r.s("k");
  for (int t = 0; t < n; ++t) out[(t + k) % n] = in[t];
}
}  // namespace

void addVectorKernels(Table& t) {
  t["vadd"] = vadd;
  t["vsub"] = vsub;
  t["vscale"] = vscale;
  t["matmul"] = matmul;
  t["matvec"] = matvec;
  t["matmul2x2"] = matmulFixed<2>;
  t["matmul3x3"] = matmulFixed<3>;
  t["matmul4x4"] = matmulFixed<4>;
  t["vadd_blocks"] = vaddBlocks;
  t["saxpy"] = saxpy;
  t["transpose"] = transposeFixed<3, 5>;
  t["transpose_shared"] = transposeFixed<4, 4>;
  t["stencil3"] = stencil3;
  t["reverse"] = reverse;
  t["rotate_array"] = rotateArray;
}

}  // namespace qgpu::kernels::ref
