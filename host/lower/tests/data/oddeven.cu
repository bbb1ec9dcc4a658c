// Odd-even transposition sort of 8 values by 4 threads (from kernels/catalog): fully unrolled it
// has 25 PTX blocks and needs if-conversion of its compare-and-swap arms to fit 32 machine blocks.
__global__ void oddeven(int* data) {
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
