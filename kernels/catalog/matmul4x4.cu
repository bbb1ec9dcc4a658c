// qgpu-kernel: matmul4x4
// summary: 4x4 matrix product, 16 threads (a full block of four warps)
// launch: grid=1 block=16
// param: a in i32[16] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
// param: b in i32[16] = 1 0 0 1 0 2 0 0 0 0 3 0 -1 0 0 4
// param: c out i32[16]
// expect: c = -3 4 9 17 -3 12 21 37 -3 20 33 57 -3 28 45 77
// tags: matrix

__global__ void matmul4x4(const int* a, const int* b, int* c) {
  int row = threadIdx.x >> 2;
  int col = threadIdx.x & 3;
  int sum = 0;
  for (int k = 0; k < 4; ++k) sum += a[row * 4 + k] * b[k * 4 + col];
  c[threadIdx.x] = sum;
}
