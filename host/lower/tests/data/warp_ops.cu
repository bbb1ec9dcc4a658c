// Warp shuffles (reduction and scan, width 4) and votes.
__global__ void warp_ops(const int* in, int* sum, int* scan, int* votes) {
  int t = threadIdx.x;
  int v = in[t];
  int s = v;
  s += __shfl_down_sync(0xffffffff, s, 2, 4);
  s += __shfl_down_sync(0xffffffff, s, 1, 4);
  sum[t] = __shfl_sync(0xffffffff, s, 0, 4);
  int x = v;
  for (int d = 1; d < 4; d *= 2) {
    int y = __shfl_up_sync(0xffffffff, x, d, 4);
    if ((t & 3) >= d) x += y;
  }
  scan[t] = x;
  unsigned ballot = __ballot_sync(0xffffffff, v > 2);
  int any = __any_sync(0xffffffff, v > 6);
  int all = __all_sync(0xffffffff, v > 0);
  votes[t] = (int)ballot + 100 * any + 1000 * all;
}
