// qgpu-kernel: scan_hillis_steele
// summary: inclusive prefix sum (Hillis-Steele) in shared memory with barriers
// launch: grid=1 block=8
// param: in in i32[8] = 3 1 7 0 4 1 6 3
// param: out out i32[8]
// expect: out = 3 4 11 11 15 16 22 25
// tags: scan shared barriers loops

// Each step reads its neighbour, waits, then writes: the barrier between the read and the write
// stands in for a second buffer.
__global__ void scan_hillis_steele(const int* in, int* out) {
  __shared__ int s[8];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  for (unsigned offset = 1; offset < blockDim.x; offset <<= 1) {
    int add = t >= offset ? s[t - offset] : 0;
    __syncthreads();
    s[t] += add;
    __syncthreads();
  }
  out[t] = s[t];
}
