// qgpu-kernel: reduce_max_atomic
// summary: maximum of 16 values over two blocks with atomicMax (out starts at INT_MIN)
// launch: grid=2 block=8
// param: in in i32[16] = -5 -3 -17 -8 -42 -1 -99 -41 -6 -7 -42 -3 -100 -2 -9 -11
// param: out out i32[1] = -2147483648
// expect: out = -1
// tags: reduction atomics minmax multiblock

__global__ void reduce_max_atomic(const int* in, int* out) {
  atomicMax(out, in[blockIdx.x * blockDim.x + threadIdx.x]);
}
