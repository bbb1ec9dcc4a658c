// qgpu-kernel: saxpy
// summary: integer y = a*x + y in place, two blocks
// launch: grid=2 block=4
// param: a scalar i32 = -3
// param: x in i32[8] = 1 2 3 4 5 6 7 8
// param: y inout i32[8] = 10 10 10 10 -10 -10 -10 -10
// expect: y = 7 4 1 -2 -25 -28 -31 -34
// tags: vector multiblock
__global__ void saxpy(int a, const int* x, int* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = a * x[i] + y[i];
}
