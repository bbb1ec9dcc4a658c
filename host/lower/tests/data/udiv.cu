// Unsigned division and remainder by constants (nvcc: mul.wide.u32 + shr.u64 >= 32).
__global__ void udiv(const unsigned* in, unsigned* q, unsigned* r) {
  int t = threadIdx.x;
  unsigned v = in[t];
  q[t] = v / 10u + v / 7u;
  r[t] = v % 10u + (v / 1000u);
}
