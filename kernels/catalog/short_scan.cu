// qgpu-kernel: short_scan
// summary: inclusive Hillis-Steele prefix sum of short values in a __shared__ short array (halfword loads and lane-serial halfword stores)
// launch: grid=1 block=16
// param: in in u32[8] = 0xffff0003 0xffff0004 0xfff70005 0x00060002 0x0003fffb 0xfff80005 0xfed40384 0xf83003e8
// param: out out u32[8]
// expect: out = 131075 327686 65546 589827 458756 262156 39584648 4269016644
// note: in is the shorts 3 -1 4 -1 5 -9 2 6 -5 3 5 -8 900 -300 1000 -2000
// tags: scan subword shared cuda-idioms

__global__ void short_scan(const short* in, short* out) {
  __shared__ short s[16];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  for (int d = 1; d < 16; d <<= 1) {
    short v = t >= d ? s[t - d] : 0;
    __syncthreads();
    s[t] += v;
    __syncthreads();
  }
  out[t] = s[t];
}
