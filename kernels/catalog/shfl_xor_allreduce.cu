// qgpu-kernel: shfl_xor_allreduce
// summary: butterfly (__shfl_xor_sync) sum and max: every lane of a warp gets the results
// launch: grid=2 block=4
// param: in in i32[8] = 3 -1 4 1 -5 9 -2 6
// param: sum out i32[8]
// param: mx out i32[8]
// expect: sum = 7 7 7 7 8 8 8 8
// expect: mx = 4 4 4 4 9 9 9 9
// tags: shuffles warp multiblock reduction

__global__ void shfl_xor_allreduce(const int* in, int* sum, int* mx) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = in[i];
  int m = s;
  for (int lane = 1; lane < 4; lane <<= 1) {
    s += __shfl_xor_sync(0xf, s, lane, 4);
    m = max(m, __shfl_xor_sync(0xf, m, lane, 4));
  }
  sum[i] = s;
  mx[i] = m;
}
