// qgpu-kernel: sync_count
// summary: __syncthreads_count / _and / _or over a 12-thread block (three warps)
// launch: grid=1 block=12
// param: in in i32[12] = 4 -1 7 0 9 2 -8 3 5 0 1 6
// param: result out i32[3]
// expect: result = 8 1 0
// tags: barriers votes

__global__ void sync_count(const int* in, int* result) {
  int v = in[threadIdx.x];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -10);
  int any = __syncthreads_or(v > 100);
  if (threadIdx.x == 0) {
    result[0] = count;
    result[1] = all != 0;
    result[2] = any != 0;
  }
}
