// qgpu-kernel: divmod_signed
// summary: signed division and remainder by a variable (truncation toward zero, negative operands)
// launch: grid=1 block=8
// param: a in i32[8] = 17 -17 17 -17 0 100 -7 2147483647
// param: b in i32[8] = 5 5 -5 -5 3 7 9 -2
// param: q out i32[8]
// param: r out i32[8]
// expect: q = 3 -3 -3 3 0 14 0 -1073741823
// expect: r = 2 -2 2 -2 0 2 -7 1
// note: no zero divisors and no INT_MIN / -1 (both undefined in CUDA C++).
// tags: division

__global__ void divmod_signed(const int* a, const int* b, int* q, int* r) {
  int t = threadIdx.x;
  q[t] = a[t] / b[t];
  r[t] = a[t] % b[t];
}
