// qgpu-kernel: factorial
// summary: n! by a loop (n <= 12 fits in 32 bits)
// launch: grid=1 block=8
// param: n in i32[8] = 0 1 2 3 5 7 10 12
// param: out out i32[8]
// expect: out = 1 1 2 6 120 5040 3628800 479001600
// tags: loops divergence

__global__ void factorial(const int* n, int* out) {
  int f = 1;
  for (int i = 2; i <= n[threadIdx.x]; ++i) f *= i;
  out[threadIdx.x] = f;
}
