// Divergent if/else diamond, an early return, abs/min/max and a select.
__global__ void branches(const int* in, int* out, int lim) {
  int t = threadIdx.x;
  int v = in[t];
  if (v == 0) return;
  int r;
  if (v < 0) r = -v * 3; else r = v > lim ? lim : v + 7;
  out[t] = r + (v > 5 ? 1 : -4);
}
