// qgpu-kernel: rotate_array
// summary: rotates an array right by k positions (remainder by a variable)
// launch: grid=1 block=10
// param: in in i32[10] = 0 1 2 3 4 5 6 7 8 9
// param: out out i32[10]
// param: k scalar i32 = 3
// param: n scalar i32 = 10
// expect: out = 7 8 9 0 1 2 3 4 5 6
// tags: permutation division

__global__ void rotate_array(const int* in, int* out, int k, int n) {
  int t = threadIdx.x;
  out[(t + k) % n] = in[t];
}
