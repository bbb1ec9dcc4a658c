// qgpu-kernel: bool_count
// summary: a bool array in shared memory and global memory (x % 3 == 0), then thread 0 counts it
// launch: grid=1 block=12
// param: x in i32[12] = 3 4 5 6 7 8 9 10 11 12 -3 1
// param: hit out u32[3]
// param: count out i32[1]
// expect: hit = 16777217 65536 65792
// expect: count = 5
// tags: subword bool shared cuda-idioms

__global__ void bool_count(const int* x, bool* hit, int* count) {
  __shared__ bool s[16];
  unsigned t = threadIdx.x;
  bool h = x[t] % 3 == 0;
  s[t] = h;
  hit[t] = h;
  __syncthreads();
  if (t == 0) {
    int c = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) c += s[i];
    count[0] = c;
  }
}
