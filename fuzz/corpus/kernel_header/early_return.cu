// qgpu-kernel: early_return
// summary: early returns for threads past n and for negative inputs; untouched outputs keep 77
// launch: grid=1 block=8
// param: in in i32[8] = 4 -1 0 9 -20 3 5 6
// param: out out i32[8] = 77 77 77 77 77 77 77 77
// param: n scalar i32 = 6
// expect: out = 9 -1 1 19 -1 7 77 77
// tags: divergence

__global__ void early_return(const int* in, int* out, int n) {
  int t = threadIdx.x;
  if (t >= n) return;
  int v = in[t];
  if (v < 0) {
    out[t] = -1;
    return;
  }
  out[t] = v * 2 + 1;
}
