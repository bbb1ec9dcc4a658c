// qgpu-kernel: matmul
// summary: n x n matrix product C = A B, row-major (expression mode: `A @ B` for nested lists)
// launch: grid=1 block=8
// param: a in i32[9] = 1 2 3 4 5 6 7 8 9
// param: b in i32[9] = 9 8 7 6 5 4 3 2 -1
// param: c out i32[9]
// param: n scalar i32 = 3
// expect: c = 30 24 12 84 69 42 138 114 72
// tags: normal-mode matrix loops division

// One output element per iteration of a block-strided loop over the n*n elements; the row and
// column come from a division by the variable n.
__global__ void matmul(const int* a, const int* b, int* c, int n) {
  for (int idx = threadIdx.x; idx < n * n; idx += blockDim.x) {
    int row = idx / n;
    int col = idx % n;
    int sum = 0;
    for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
    c[idx] = sum;
  }
}
