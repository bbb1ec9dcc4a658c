// qgpu-kernel: matvec
// summary: matrix-vector product y = A x, A is m x n row-major (expression mode: `A @ v`)
// launch: grid=1 block=4
// param: a in i32[12] = 1 2 3 4 5 6 7 8 -9 10 11 12
// param: x in i32[4] = 1 -1 2 3
// param: y out i32[3]
// param: m scalar i32 = 3
// param: n scalar i32 = 4
// expect: y = 17 37 39
// tags: normal-mode matrix loops

__global__ void matvec(const int* a, const int* x, int* y, int m, int n) {
  for (int row = threadIdx.x; row < m; row += blockDim.x) {
    int sum = 0;
    for (int k = 0; k < n; ++k) sum += a[row * n + k] * x[k];
    y[row] = sum;
  }
}
