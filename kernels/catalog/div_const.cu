// qgpu-kernel: div_const
// summary: division and remainder by constants (multiply-high sequences and power-of-2 shifts)
// launch: grid=1 block=8
// param: in in i32[8] = 0 1 -1 7 -7 100 -100 2147483647
// param: q3 out i32[8]
// param: r7 out i32[8]
// param: u10 out u32[8]
// param: d4 out i32[8]
// expect: q3 = 0 0 0 2 -2 33 -33 715827882
// expect: r7 = 0 1 -1 0 0 2 -2 1
// expect: u10 = 0 0 429496729 0 429496728 10 429496719 214748364
// expect: d4 = 0 0 0 1 -1 25 -25 536870911
// tags: division

__global__ void div_const(const int* in, int* q3, int* r7, unsigned* u10, int* d4) {
  int t = threadIdx.x;
  int v = in[t];
  q3[t] = v / 3;
  r7[t] = v % 7;
  u10[t] = (unsigned)v / 10u;
  d4[t] = v / 4;
}
