// qgpu-kernel: fibonacci
// summary: n-th Fibonacci number by iteration, per-lane trip counts 0..30
// launch: grid=1 block=8
// param: n in i32[8] = 0 1 2 5 10 20 25 30
// param: out out i32[8]
// expect: out = 0 1 1 5 55 6765 75025 832040
// tags: loops divergence

__global__ void fibonacci(const int* n, int* out) {
  int a = 0;
  int b = 1;
  for (int i = 0; i < n[threadIdx.x]; ++i) {
    int c = a + b;
    a = b;
    b = c;
  }
  out[threadIdx.x] = a;
}
