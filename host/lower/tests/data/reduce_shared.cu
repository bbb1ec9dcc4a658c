// Shared-memory tree reduction with barriers (blockDim.x must be a power of two).
__global__ void reduce_shared(const int* in, int* out) {
  __shared__ int s[16];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[0] = s[0];
}
