// qgpu-kernel: histogram
// summary: 8-bin histogram of 16 values with atomicAdd in global memory
// launch: grid=1 block=16
// param: data in i32[16] = 0 1 2 3 3 3 7 7 1 0 5 5 5 5 2 6
// param: bins out i32[8]
// expect: bins = 2 2 2 3 0 4 1 2
// tags: histogram atomics

__global__ void histogram(const int* data, int* bins) {
  atomicAdd(&bins[data[threadIdx.x]], 1);
}
