// qgpu-kernel: matmul2x2
// summary: 2x2 matrix product, one thread per output element
// launch: grid=1 block=4
// param: a in i32[4] = 1 2 3 4
// param: b in i32[4] = 5 6 7 8
// param: c out i32[4]
// expect: c = 19 22 43 50
// tags: matrix

__global__ void matmul2x2(const int* a, const int* b, int* c) {
  int row = threadIdx.x / 2;
  int col = threadIdx.x % 2;
  c[threadIdx.x] = a[row * 2] * b[col] + a[row * 2 + 1] * b[2 + col];
}
