// qgpu-kernel: dot
// summary: dot product u.v of two n-element vectors (expression mode: `u @ v`, `dot(u, v)`)
// launch: grid=1 block=4
// param: u in i32[3] = 1 2 3
// param: v in i32[3] = 4 5 6
// param: out out i32[1]
// param: n scalar i32 = 3
// expect: out = 32
// tags: normal-mode dot atomics loops

// Each thread sums a block-strided slice, then adds it to out[0] with one atomicAdd, so any n
// works with any block size.
__global__ void dot(const int* u, const int* v, int* out, int n) {
  int sum = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += u[i] * v[i];
  atomicAdd(out, sum);
}
