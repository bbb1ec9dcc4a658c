// __syncthreads_count/and/or, twice in a row (the hidden counter must return to zero).
__global__ void sync_count(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  int c = __syncthreads_count(v > 3);
  int a = __syncthreads_and(v > 0);
  int o = __syncthreads_or(v > 8);
  int c2 = __syncthreads_count(v & 1);
  out[t] = c + 10 * a + 100 * o + 1000 * c2;
}
