// qgpu-kernel: last_block_fence
// summary: last-block-done sum with __threadfence, atomicInc ticket and module-scope __shared__
// launch: grid=4 block=4
// param: in in i32[16] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
// param: partial out i32[4]
// param: ticket out u32[1]
// param: out out i32[1]
// expect: partial = 10 26 42 58
// expect: ticket = 0
// expect: out = 136
// tags: reduction multiblock atomics fences shared cuda-idioms

// The samples' threadFenceReduction pattern: every block stores its partial sum, fences, and takes
// a ticket; the block that draws the last ticket adds the partials. The fence orders the partial
// before the ticket on a GPU; the machine is sequentially consistent, so it is a no-op here.
__shared__ unsigned amLast;  // module scope: clang's `.visible .shared`

__global__ void last_block_fence(const int* in, int* partial, unsigned* ticket, int* out) {
  __shared__ int s[4];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  if (t == 0) {
    partial[blockIdx.x] = s[0] + s[1] + s[2] + s[3];
    __threadfence();
    unsigned mine = atomicInc(ticket, gridDim.x);
    amLast = mine == gridDim.x - 1;
  }
  __syncthreads();
  if (amLast && t == 0) {
    int sum = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) sum += ((volatile int*)partial)[b];
    out[0] = sum;
    *ticket = 0;
  }
}
