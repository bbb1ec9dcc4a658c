// qgpu-kernel: clamp_select
// summary: clamp to [lo, hi] with min/max, and a parity select (selp)
// launch: grid=1 block=8
// param: in in i32[8] = -100 -5 0 3 7 10 11 1000
// param: clamped out i32[8]
// param: sel out i32[8]
// param: lo scalar i32 = -5
// param: hi scalar i32 = 10
// expect: clamped = -5 -5 0 3 7 10 10 10
// expect: sel = 100 -5 0 3 7 -10 11 -1000
// tags: select minmax

__global__ void clamp_select(const int* in, int* clamped, int* sel, int lo, int hi) {
  int t = threadIdx.x;
  int v = in[t];
  clamped[t] = min(max(v, lo), hi);
  sel[t] = (v & 1) ? v : -v;
}
