// qgpu-kernel: vadd_blocks
// summary: vector add over four blocks with a bounds guard (blockIdx.x * blockDim.x + threadIdx.x)
// launch: grid=4 block=4
// param: a in i32[16] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
// param: b in i32[16] = 100 200 300 400 500 600 700 800 900 1000 1100 1200 1300 1400 1500 1600
// param: out out i32[16]
// param: n scalar i32 = 14
// expect: out = 101 202 303 404 505 606 707 808 909 1010 1111 1212 1313 1414 0 0
// tags: vector multiblock divergence

__global__ void vadd_blocks(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
