// qgpu-kernel: popcount
// summary: population count (__popc) of each word
// launch: grid=1 block=8
// param: x in u32[8] = 0 1 3 255 0x80000000 0xffffffff 0x12345678 0xf0f0f0f0
// param: out out i32[8]
// expect: out = 0 1 2 8 1 32 13 16
// tags: bits

__global__ void popcount(const unsigned* x, int* out) {
  out[threadIdx.x] = __popc(x[threadIdx.x]);
}
