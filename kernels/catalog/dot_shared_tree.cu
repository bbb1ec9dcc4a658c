// qgpu-kernel: dot_shared_tree
// summary: dot product by a shared-memory tree reduction with __syncthreads
// launch: grid=1 block=8
// param: a in i32[8] = 1 2 3 4 5 6 7 8
// param: b in i32[8] = 8 -7 6 -5 4 -3 2 1
// param: out out i32[1]
// expect: out = 16
// tags: dot shared barriers reduction

__global__ void dot_shared_tree(const int* a, const int* b, int* out) {
  __shared__ int partial[8];
  unsigned t = threadIdx.x;
  partial[t] = a[t] * b[t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[0] = partial[0];
}
