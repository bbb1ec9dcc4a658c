// qgpu-kernel: dot_shfl
// summary: dot product by a warp shuffle reduction (__shfl_down_sync, width 4) in two blocks
// launch: grid=2 block=4
// param: a in i32[8] = 1 2 3 4 5 6 7 8
// param: b in i32[8] = 1 1 2 2 3 3 -4 -4
// param: out out i32[1]
// expect: out = -10
// tags: dot shuffles warp multiblock atomics

// One 4-thread block is one warp on both a real GPU and the 4-lane machine; mask 0xf and width 4
// keep the shuffles inside it.
__global__ void dot_shfl(const int* a, const int* b, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = a[i] * b[i];
  v += __shfl_down_sync(0xf, v, 2, 4);
  v += __shfl_down_sync(0xf, v, 1, 4);
  if (threadIdx.x == 0) atomicAdd(out, v);
}
