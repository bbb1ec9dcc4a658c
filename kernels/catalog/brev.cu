// qgpu-kernel: brev
// summary: bit reversal (__brev) of unsigned words
// launch: grid=1 block=8
// param: x in u32[8] = 0 1 2 0x80000000 0xffffffff 0x12345678 0xf0000000 6
// param: out out u32[8]
// expect: out = 0 2147483648 1073741824 1 4294967295 510274632 15 1610612736
// tags: bits

__global__ void brev(const unsigned* x, unsigned* out) {
  out[threadIdx.x] = __brev(x[threadIdx.x]);
}
