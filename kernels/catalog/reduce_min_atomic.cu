// qgpu-kernel: reduce_min_atomic
// summary: minimum of 12 values with atomicMin (out starts at INT_MAX)
// launch: grid=1 block=12
// param: in in i32[12] = 5 -3 17 8 -42 0 99 -41 6 7 -42 3
// param: out out i32[1] = 2147483647
// expect: out = -42
// tags: reduction atomics minmax

__global__ void reduce_min_atomic(const int* in, int* out) {
  atomicMin(out, in[threadIdx.x]);
}
