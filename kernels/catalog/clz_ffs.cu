// qgpu-kernel: clz_ffs
// summary: count leading zeros (__clz) and find first set bit (__ffs) of signed words
// launch: grid=1 block=8
// param: x in i32[8] = 0 1 -1 8 1024 -2147483648 2147483647 96
// param: clz out i32[8]
// param: ffs out i32[8]
// expect: clz = 32 31 0 28 21 0 1 25
// expect: ffs = 0 1 1 4 11 32 1 6
// tags: bits

__global__ void clz_ffs(const int* x, int* clz, int* ffs) {
  int v = x[threadIdx.x];
  clz[threadIdx.x] = __clz(v);
  ffs[threadIdx.x] = __ffs(v);
}
