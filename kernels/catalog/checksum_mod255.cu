// qgpu-kernel: checksum_mod255
// summary: Fletcher-16 checksum (sums mod 255) of four 8-byte rows, one row per thread
// launch: grid=1 block=4
// param: data in u32[32] = 1 2 3 4 5 6 7 8 255 255 255 255 255 255 255 255 0 0 0 0 0 0 0 1 200 100 50 25 12 6 3 1
// param: out out u32[4]
// expect: out = 30756 0 257 63630
// tags: loops division checksum

__global__ void checksum_mod255(const unsigned* data, unsigned* out) {
  unsigned sum1 = 0;
  unsigned sum2 = 0;
  for (int k = 0; k < 8; ++k) {
    sum1 = (sum1 + data[threadIdx.x * 8 + k]) % 255;
    sum2 = (sum2 + sum1) % 255;
  }
  out[threadIdx.x] = (sum2 << 8) | sum1;
}
