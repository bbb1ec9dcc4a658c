// qgpu-kernel: vscale
// summary: scalar times vector k*v (expression mode: `3 * [1, 2]`)
// launch: grid=1 block=4
// param: k scalar i32 = 3
// param: v in i32[5] = 1 2 -3 4 50
// param: out out i32[5]
// param: n scalar i32 = 5
// expect: out = 3 6 -9 12 150
// tags: normal-mode vector loops

__global__ void vscale(int k, const int* v, int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    out[i] = k * v[i];
  }
}
