// qgpu-kernel: isqrt
// summary: integer square root by binary search over [0, 65536) (16 iterations, unsigned)
// launch: grid=1 block=8
// param: x in u32[8] = 0 1 2 15 16 99 1000000 4294967295
// param: out out u32[8]
// expect: out = 0 1 1 3 4 9 1000 65535
// tags: loops divergence

__global__ void isqrt(const unsigned* x, unsigned* out) {
  unsigned v = x[threadIdx.x];
  unsigned lo = 0;
  unsigned hi = 65536;
  while (lo + 1 < hi) {
    unsigned mid = (lo + hi) / 2;
    if (mid * mid <= v) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out[threadIdx.x] = lo;
}
