// qgpu-kernel: transpose
// summary: transpose of a 3x5 matrix into 5x3, one thread per element
// launch: grid=1 block=15
// param: in in i32[15] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
// param: out out i32[15]
// expect: out = 1 6 11 2 7 12 3 8 13 4 9 14 5 10 15
// tags: matrix division

__global__ void transpose(const int* in, int* out) {
  int row = threadIdx.x / 5;
  int col = threadIdx.x % 5;
  out[col * 3 + row] = in[threadIdx.x];
}
