// qgpu-kernel: noinline_call
// summary: two calls to a __noinline__ device function (PTX .func, call.uni, .param passing)
// launch: grid=1 block=8
// param: a in i32[8] = 0 1 2 3 -4 5 -6 7
// param: b in i32[8] = 1 1 2 -3 4 0 6 -7
// param: out out i32[8]
// expect: out = 20 15 15 39 81 16 147 147
// tags: calls

__device__ __noinline__ int poly(int x, int y) { return x * x - 3 * y + 7; }

__global__ void noinline_call(const int* a, const int* b, int* out) {
  int t = threadIdx.x;
  out[t] = poly(a[t], b[t]) + 2 * poly(b[t], a[t]);
}
