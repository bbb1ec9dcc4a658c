// n x n matrix product with a variable n: the kernel with the most live values (spilling).
__global__ void matmul(const int* a, const int* b, int* c, int n) {
  int t = threadIdx.x;
  int row = t / n, col = t % n;
  if (row >= n) return;
  int s = 0;
  for (int k = 0; k < n; ++k) s += a[row * n + k] * b[k * n + col];
  c[row * n + col] = s;
}
