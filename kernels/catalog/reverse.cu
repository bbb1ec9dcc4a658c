// qgpu-kernel: reverse
// summary: reverses the first n elements; threads past n do nothing
// launch: grid=1 block=12
// param: in in i32[12] = 1 2 3 4 5 6 7 8 9 10 11 12
// param: out out i32[12]
// param: n scalar i32 = 10
// expect: out = 10 9 8 7 6 5 4 3 2 1 0 0
// tags: permutation divergence

__global__ void reverse(const int* in, int* out, int n) {
  int t = threadIdx.x;
  if (t < n) out[n - 1 - t] = in[t];
}
