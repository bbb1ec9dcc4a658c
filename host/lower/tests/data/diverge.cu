// Divergent if/else, nested divergence and an early return.
__global__ void diverge(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  if (v == 0) return;              // early return: out[t] keeps its initial value
  int r;
  if (v < 0) {
    r = -v * 3;
  } else {
    if (v & 1) r = v + 100;        // nested divergence
    else r = v * 2;
  }
  out[t] = r;
}
