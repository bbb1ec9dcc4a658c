// qgpu-kernel: local_frame
// summary: a dynamically indexed per-thread array (local memory: spill slots), two warps
// launch: grid=1 block=8
// param: in in u32[8] = 1 6 3 7 0 5 2 4
// param: out out u32[8]
// expect: out = 1 14 19 31 32 45 50 60

// Expected values: out[t] = 8t + (in[t] & 7), the element the thread wrote at that index.
__global__ void local_frame(const unsigned* in, unsigned* out) {
  unsigned a[8];
  unsigned t = threadIdx.x;
  for (int i = 0; i < 8; ++i) a[i] = t * 8 + i;
  out[t] = a[in[t] & 7];
}
