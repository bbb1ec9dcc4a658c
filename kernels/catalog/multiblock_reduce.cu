// qgpu-kernel: multiblock_reduce
// summary: per-block shared-memory sums over four blocks, then one atomicAdd per block
// launch: grid=4 block=4
// param: in in i32[16] = 1 2 3 4 10 20 30 40 -1 -2 -3 -4 100 200 300 400
// param: partial out i32[4]
// param: total out i32[1]
// expect: partial = 10 100 -10 1000
// expect: total = 1100
// tags: reduction shared barriers multiblock atomics

__global__ void multiblock_reduce(const int* in, int* partial, int* total) {
  __shared__ int s[4];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = s[0];
    atomicAdd(total, s[0]);
  }
}
