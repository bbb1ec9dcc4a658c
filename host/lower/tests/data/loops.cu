// Data-dependent loops with per-lane trip counts: gcd and Collatz steps.
__global__ void loops(const int* a, const int* b, int* g, int* steps) {
  int t = threadIdx.x;
  int x = a[t], y = b[t];
  while (y != 0) { int r = x % y; x = y; y = r; }
  g[t] = x;
  int v = a[t];
  int n = 0;
  while (v > 1) { v = (v & 1) ? 3 * v + 1 : v / 2; ++n; }
  steps[t] = n;
}
