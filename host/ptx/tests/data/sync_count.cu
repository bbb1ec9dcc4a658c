// __syncthreads_count/and/or: block-wide reductions of a predicate (scoped %p redeclarations).
__global__ void sync_count(const int* in, int* out) {
  int p = in[threadIdx.x] & 1;
  int c = __syncthreads_count(p);
  int a = __syncthreads_and(p);
  int o = __syncthreads_or(p);
  out[threadIdx.x] = c + a * 100 + o * 1000;
}
