// qgpu-kernel: matmul3x3
// summary: 3x3 matrix product, one thread per output element (division by the constant 3)
// launch: grid=1 block=9
// param: a in i32[9] = 2 0 -1 1 3 2 0 1 4
// param: b in i32[9] = 1 2 3 4 5 6 7 8 9
// param: c out i32[9]
// expect: c = -5 -4 -3 27 33 39 32 37 42
// tags: matrix division

__global__ void matmul3x3(const int* a, const int* b, int* c) {
  int row = threadIdx.x / 3;
  int col = threadIdx.x % 3;
  int sum = 0;
  for (int k = 0; k < 3; ++k) sum += a[row * 3 + k] * b[k * 3 + col];
  c[threadIdx.x] = sum;
}
