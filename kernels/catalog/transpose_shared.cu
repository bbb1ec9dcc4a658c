// qgpu-kernel: transpose_shared
// summary: 4x4 transpose through a shared-memory tile and a barrier
// launch: grid=1 block=16
// param: in in i32[16] = 11 12 13 14 21 22 23 24 31 32 33 34 41 42 43 44
// param: out out i32[16]
// expect: out = 11 21 31 41 12 22 32 42 13 23 33 43 14 24 34 44
// tags: matrix shared barriers

__global__ void transpose_shared(const int* in, int* out) {
  __shared__ int tile[16];
  unsigned t = threadIdx.x;
  tile[t] = in[t];
  __syncthreads();
  out[t] = tile[(t % 4) * 4 + t / 4];
}
