// Warp sum with __shfl_down_sync (width 4), plus an up-shuffle scan step and an idx broadcast.
__global__ void warp_shuffle(const int* in, int* out) {
  int v = in[threadIdx.x];
  for (int d = 2; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d, 4);
  int up = __shfl_up_sync(0xffffffffu, in[threadIdx.x], 1, 4);
  int b = __shfl_sync(0xfu, v, 0, 4);
  out[threadIdx.x] = v + up + b + __shfl_xor_sync(0xffffffffu, v, 1, 4);
}
