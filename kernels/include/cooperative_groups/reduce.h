// qgpu/kernels/include/cooperative_groups/reduce.h — cg::reduce and its function objects for the
// clang-14 path (nvcc uses the toolkit's <cooperative_groups/reduce.h>).
//
// Contract: `cg::reduce(group, value, op)` returns, in every thread of `group` (a
// thread_block_tile<N> with N <= 4, or a coalesced_group), op folded over the values of all the
// group's threads. The toolkit computes it with a butterfly of shfl_xor (tiles) on sm_75; here the
// tiles do the same, and a coalesced group (whose ranks need not be a power of two) gathers every
// rank's value with shfl. The integer ops are associative and commutative, so every order gives
// the toolkit's result. Function objects: plus, less (the minimum), greater (the maximum),
// bit_and, bit_or, bit_xor, as the toolkit names them.
#pragma once

#include <cooperative_groups.h>

namespace cooperative_groups {

template <class T>
struct plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct less {
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  __device__ T operator()(T a, T b) const { return a & b; }
};
template <class T>
struct bit_or {
  __device__ T operator()(T a, T b) const { return a | b; }
};
template <class T>
struct bit_xor {
  __device__ T operator()(T a, T b) const { return a ^ b; }
};

template <unsigned int N, class T, class Op>
static __device__ __forceinline__ T reduce(const thread_block_tile<N>& g, T value, Op op) {
  for (unsigned int d = N / 2; d > 0; d /= 2) value = op(value, g.shfl_xor(value, (int)d));
  return value;
}

template <class T, class Op>
static __device__ __forceinline__ T reduce(const coalesced_group& g, T value, Op op) {
  T acc = g.shfl(value, 0);
  for (unsigned int r = 1; r < g.size(); ++r) acc = op(acc, g.shfl(value, (int)r));
  return acc;
}

}  // namespace cooperative_groups
