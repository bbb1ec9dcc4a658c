// qgpu-kernel: argmax
// summary: maximum and its lowest index by a shared-memory tree reduction
// launch: grid=1 block=8
// param: in in i32[8] = 3 9 -1 9 4 0 9 2
// param: out out i32[2]
// expect: out = 9 1
// tags: reduction shared barriers minmax divergence

__global__ void argmax(const int* in, int* out) {
  __shared__ int value[8];
  __shared__ int index[8];
  int t = threadIdx.x;
  value[t] = in[t];
  index[t] = t;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) {
      int v = value[t + stride];
      int i = index[t + stride];
      if (v > value[t] || (v == value[t] && i < index[t])) {
        value[t] = v;
        index[t] = i;
      }
    }
    __syncthreads();
  }
  if (t == 0) {
    out[0] = value[0];
    out[1] = index[0];
  }
}
