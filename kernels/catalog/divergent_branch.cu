// qgpu-kernel: divergent_branch
// summary: if/else on data parity: lanes of one warp take different paths and reconverge
// launch: grid=1 block=8
// param: in in i32[8] = 1 2 3 4 -5 -6 7 100
// param: out out i32[8]
// expect: out = 5 2 11 3 -13 -2 23 51
// tags: divergence

__global__ void divergent_branch(const int* in, int* out) {
  int v = in[threadIdx.x];
  if (v & 1) {
    v = v * 3 + 1;
  } else {
    v = v / 2;
  }
  out[threadIdx.x] = v + 1;
}
