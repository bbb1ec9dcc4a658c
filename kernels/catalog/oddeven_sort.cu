// qgpu-kernel: oddeven_sort
// summary: odd-even transposition sort of 8 values by 4 threads in shared memory, 8 barrier phases
// launch: grid=1 block=4
// param: data inout i32[8] = 5 -1 9 3 3 0 -7 12
// expect: data = -7 -1 0 3 3 5 9 12
// tags: sorting shared barriers divergence loops

// The kernel that exposed clang-14's __syncthreads miscompile (llvm-project#58626): it needs the
// barrier to order the shared-memory reloads (kernels/qgpu_cuda.h maps it to barrier.sync).
__global__ void oddeven_sort(int* data) {
  __shared__ int s[8];
  int t = threadIdx.x;
  s[2 * t] = data[2 * t];
  s[2 * t + 1] = data[2 * t + 1];
  __syncthreads();
  for (int phase = 0; phase < 8; ++phase) {
    int i = 2 * t + (phase & 1);
    if (i + 1 < 8) {
      int x = s[i];
      int y = s[i + 1];
      if (x > y) {
        s[i] = y;
        s[i + 1] = x;
      }
    }
    __syncthreads();
  }
  data[2 * t] = s[2 * t];
  data[2 * t + 1] = s[2 * t + 1];
}
