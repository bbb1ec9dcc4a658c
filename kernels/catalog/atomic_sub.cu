// qgpu-kernel: atomic_sub
// summary: atomicSub of every element from a shared counter (atom.add of the negation)
// launch: grid=1 block=8
// param: in in i32[8] = 1 2 3 4 5 6 7 -8
// param: counter inout i32[1] = 100
// expect: counter = 80
// tags: atomics

__global__ void atomic_sub(const int* in, int* counter) {
  atomicSub(counter, in[threadIdx.x]);
}
