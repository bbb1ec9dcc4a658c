// qgpu-kernel: scan_shfl
// summary: inclusive prefix sum within each 4-lane warp with __shfl_up_sync, two blocks
// launch: grid=2 block=4
// param: in in i32[8] = 1 2 3 4 10 -20 30 -40
// param: out out i32[8]
// expect: out = 1 3 6 10 10 -10 20 -20
// tags: scan shuffles warp multiblock

// Width 4 and mask 0xf: a 4-thread block is one warp on a real GPU and on the 4-lane machine.
__global__ void scan_shfl(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  for (int offset = 1; offset < 4; offset <<= 1) {
    int up = __shfl_up_sync(0xf, v, offset, 4);
    if ((int)threadIdx.x >= offset) v += up;
  }
  out[i] = v;
}
