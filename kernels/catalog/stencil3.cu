// qgpu-kernel: stencil3
// summary: 1-D 3-point stencil (1 2 1) through shared memory with a clamped halo
// launch: grid=1 block=8
// param: in in i32[8] = 1 2 3 4 10 0 -6 8
// param: out out i32[8]
// expect: out = 5 8 12 21 24 4 -4 18
// tags: stencil shared barriers divergence

__global__ void stencil3(const int* in, int* out) {
  __shared__ int s[10];
  int t = threadIdx.x;
  int n = blockDim.x;
  s[t + 1] = in[t];
  if (t == 0) s[0] = in[0];
  if (t == n - 1) s[n + 1] = in[n - 1];
  __syncthreads();
  out[t] = s[t] + 2 * s[t + 1] + s[t + 2];
}
