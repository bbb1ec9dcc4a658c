// qgpu-kernel: abs_diff
// summary: abs(a-b), min(a,b) and max(a,b) per element
// launch: grid=1 block=8
// param: a in i32[8] = 5 -5 0 100 -100 7 -2147483647 42
// param: b in i32[8] = 3 3 0 -100 100 7 0 -42
// param: diff out i32[8]
// param: lo out i32[8]
// param: hi out i32[8]
// expect: diff = 2 8 0 200 200 0 2147483647 84
// expect: lo = 3 -5 0 -100 -100 7 -2147483647 -42
// expect: hi = 5 3 0 100 100 7 0 42
// tags: select minmax

__global__ void abs_diff(const int* a, const int* b, int* diff, int* lo, int* hi) {
  int t = threadIdx.x;
  diff[t] = abs(a[t] - b[t]);
  lo[t] = min(a[t], b[t]);
  hi[t] = max(a[t], b[t]);
}
