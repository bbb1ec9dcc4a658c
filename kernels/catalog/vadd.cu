// qgpu-kernel: vadd
// summary: element-wise sum u+v of two n-element vectors (expression mode: `u + v`)
// launch: grid=1 block=4
// param: u in i32[6] = 1 2 3 4 5 6
// param: v in i32[6] = 10 -20 30 -40 50 -60
// param: out out i32[6]
// param: n scalar i32 = 6
// expect: out = 11 -18 33 -36 55 -54
// tags: normal-mode vector loops

// Grid-stride loop: correct for any n and any launch shape.
__global__ void vadd(const int* u, const int* v, int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    out[i] = u[i] + v[i];
  }
}
