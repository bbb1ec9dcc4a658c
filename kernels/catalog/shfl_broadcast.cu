// qgpu-kernel: shfl_broadcast
// summary: __shfl_sync by lane index: rotate within the warp and broadcast lane 2
// launch: grid=2 block=4
// param: in in i32[8] = 10 11 12 13 20 21 22 23
// param: rot out i32[8]
// param: bcast out i32[8]
// expect: rot = 11 12 13 10 21 22 23 20
// expect: bcast = 12 12 12 12 22 22 22 22
// tags: shuffles warp multiblock

__global__ void shfl_broadcast(const int* in, int* rot, int* bcast) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  rot[i] = __shfl_sync(0xf, v, (threadIdx.x + 1) % 4, 4);
  bcast[i] = __shfl_sync(0xf, v, 2, 4);
}
