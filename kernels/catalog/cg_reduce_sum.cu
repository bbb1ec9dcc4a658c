// qgpu-kernel: cg_reduce_sum
// summary: cooperative-groups reduce_sum(group, temp, val) over a thread_block with a dynamic shared scratch, one atomicAdd per block
// launch: grid=2 block=8 shared=8
// param: in in i32[16] = 5 -3 8 1 0 7 -2 4 10 20 30 40 -5 -15 6 9
// param: sums out i32[2]
// param: total out i32[1]
// expect: sums = 20 95
// expect: total = 115
// tags: reduction cooperative-groups dynamic-shared template atomics cuda-idioms

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// The shape of the cooperative-groups introduction's reduce_sum: a group-generic tree in a
// scratch array, g.sync() between the steps; rank 0 ends with the group's sum. The scratch is the
// launch's dynamic shared memory (shared=8: one word per thread).
template <class Group>
__device__ int reduce_sum(const Group& g, int* temp, int val) {
  int lane = g.thread_rank();
  for (int i = g.size() / 2; i > 0; i /= 2) {
    temp[lane] = val;
    g.sync();
    if (lane < i) val += temp[lane + i];
    g.sync();
  }
  return val;
}

__global__ void cg_reduce_sum(const int* in, int* sums, int* total) {
  extern __shared__ int temp[];
  cg::thread_block block = cg::this_thread_block();
  int v = in[blockIdx.x * block.size() + block.thread_rank()];
  int s = reduce_sum(block, temp, v);
  if (block.thread_rank() == 0) {
    sums[blockIdx.x] = s;
    atomicAdd(total, s);
  }
}
