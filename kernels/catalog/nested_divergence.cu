// qgpu-kernel: nested_divergence
// summary: branches nested three deep on thread id and data, with remainders by a constant
// launch: grid=1 block=8
// param: in in i32[8] = 5 -7 0 12 9 12 4 -5
// param: out out i32[8]
// expect: out = 105 7 0 112 2 1 16 25
// tags: divergence division

__global__ void nested_divergence(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  int r;
  if (t < 4) {
    if (v > 0) {
      r = v + 100;
    } else {
      r = -v;
    }
  } else {
    if (v % 3 == 0) {
      if (v > 10) {
        r = 1;
      } else {
        r = 2;
      }
    } else {
      r = v * v;
    }
  }
  out[t] = r;
}
