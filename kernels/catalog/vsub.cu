// qgpu-kernel: vsub
// summary: element-wise difference u-v of two n-element vectors (expression mode: `u - v`)
// launch: grid=1 block=4
// param: u in i32[5] = 9 8 7 6 5
// param: v in i32[5] = 1 10 -3 6 100
// param: out out i32[5]
// param: n scalar i32 = 5
// expect: out = 8 -2 10 0 -95
// tags: normal-mode vector loops

__global__ void vsub(const int* u, const int* v, int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    out[i] = u[i] - v[i];
  }
}
