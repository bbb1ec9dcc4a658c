// Tree reduction in shared memory with __syncthreads; one sum per block.
__global__ void shared_reduce(const int* in, int* out) {
  __shared__ int tile[16];
  unsigned t = threadIdx.x;
  tile[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = tile[0];
}
