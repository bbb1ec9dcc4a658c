// Closed-form triangular sum: clang replaces the loop by real 64-bit arithmetic.
__global__ void trisum(const unsigned* in, unsigned* out) {
  unsigned n = in[threadIdx.x];
  unsigned s = 0;
  for (unsigned i = 0; i < n; ++i) s += i;
  out[threadIdx.x] = s;
}
