// Unsigned division and modulo by constants (nvcc: mul.wide.u32 + shr.u64).
__global__ void udiv_const(const unsigned* in, unsigned* out) {
  unsigned v = in[threadIdx.x];
  out[threadIdx.x] = v / 10u + v % 7u + v / 1000u;
}
