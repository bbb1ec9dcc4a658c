// A data-dependent loop: sum of a[0..n) per thread with a stride, plus a gcd loop.
__global__ void loop_sum(const int* a, int* out, int n) {
  int s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += a[i];
  unsigned x = (unsigned)s, y = 12u;
  while (y != 0) { unsigned t = x % y; x = y; y = t; }
  out[threadIdx.x] = s - (int)x;
}
