// qgpu-kernel: horner
// summary: polynomial evaluation by Horner's rule, coefficient count given at run time
// launch: grid=1 block=8
// param: coeffs in i32[5] = 2 -3 0 5 -7
// param: x in i32[8] = -3 -2 -1 0 1 2 3 4
// param: out out i32[8]
// param: count scalar i32 = 5
// expect: out = 221 39 -7 -7 -3 11 89 333
// note: coeffs[0] is the highest-degree coefficient: 2x^4 - 3x^3 + 5x - 7.
// tags: loops

__global__ void horner(const int* coeffs, const int* x, int* out, int count) {
  int v = x[threadIdx.x];
  int r = 0;
  for (int k = 0; k < count; ++k) r = r * v + coeffs[k];
  out[threadIdx.x] = r;
}
