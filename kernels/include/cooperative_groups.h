// qgpu/kernels/include/cooperative_groups.h — the cooperative-groups subset for the clang-14 path.
//
// Contract: host/cuda/compile.cpp puts kernels/include first on clang's include path, so
// `#include <cooperative_groups.h>` finds this file, not the CUDA toolkit's (whose body clang
// cannot read with -nocudainc). nvcc never sees it. Names and signatures are the toolkit's, so a
// kernel compiles unchanged with both compilers; only 1-D blocks are meant (the machine's).
//   thread_block: this_thread_block(), sync(), thread_rank(), size(), num_threads(),
//                 group_index()/thread_index() .x, and the free function sync(g);
//   thread_block_tile<N> for N = 1, 2, 4 (tiled_partition<N>(block)): sync(), thread_rank(),
//                 size(), num_threads(), meta_group_rank(), meta_group_size(), shfl, shfl_up,
//                 shfl_down, shfl_xor, any, all, ballot (the tile's own lanes, bit 0 = rank 0);
//   coalesced_group: coalesced_threads() (the warp's active lanes), sync(), size(),
//                 num_threads(), thread_rank(), shfl, shfl_up, shfl_down (by rank), any, all,
//                 ballot (packed in rank order).
// A tile wider than 4 lanes assumes 32-lane warps: refused at compile time, naming that.
#pragma once

#if !defined(__clang__) || !defined(__CUDA__)
#error "kernels/include/cooperative_groups.h is for the clang-14 path; nvcc uses the toolkit's"
#endif

namespace cooperative_groups {

struct __qgpu_dim3 {
  unsigned int x, y, z;
};

class thread_block {
 public:
  __device__ void sync() const { __syncthreads(); }
  __device__ unsigned int thread_rank() const { return threadIdx.x; }
  __device__ unsigned int size() const { return blockDim.x; }
  __device__ unsigned int num_threads() const { return blockDim.x; }
  __device__ __qgpu_dim3 group_index() const { return {blockIdx.x, 0, 0}; }
  __device__ __qgpu_dim3 thread_index() const { return {threadIdx.x, 0, 0}; }
};

static __device__ __forceinline__ thread_block this_thread_block() { return thread_block(); }
static __device__ __forceinline__ void sync(const thread_block& g) { g.sync(); }

template <unsigned int N>
class thread_block_tile {
  static_assert(N == 1 || N == 2 || N == 4,
                "tiled_partition<N> with N > 4: the kernel assumes 32-lane warps (qgpu warps have 4 "
                "lanes; tiles of 1, 2 or 4 threads are supported)");

 public:
  // The lanes of this tile in the warp (for the *_sync masks on a 32-lane GPU).
  __device__ unsigned int mask() const {
    unsigned int lane = __nvvm_read_ptx_sreg_laneid();
    return ((N == 32 ? 0u : (1u << N)) - 1u) << (lane & ~(N - 1u));
  }
  __device__ void sync() const { __syncwarp(mask()); }
  __device__ unsigned int thread_rank() const { return threadIdx.x & (N - 1u); }
  __device__ unsigned int size() const { return N; }
  __device__ unsigned int num_threads() const { return N; }
  __device__ unsigned int meta_group_rank() const { return threadIdx.x / N; }
  __device__ unsigned int meta_group_size() const { return (blockDim.x + N - 1u) / N; }
  template <class T>
  __device__ T shfl(T var, int srcRank) const { return __shfl_sync(mask(), var, srcRank, N); }
  template <class T>
  __device__ T shfl_up(T var, unsigned int delta) const { return __shfl_up_sync(mask(), var, delta, N); }
  template <class T>
  __device__ T shfl_down(T var, unsigned int delta) const {
    return __shfl_down_sync(mask(), var, delta, N);
  }
  template <class T>
  __device__ T shfl_xor(T var, int laneMask) const { return __shfl_xor_sync(mask(), var, laneMask, N); }
  __device__ int any(int predicate) const { return __any_sync(mask(), predicate); }
  __device__ int all(int predicate) const { return __all_sync(mask(), predicate); }
  // The tile's own ballot: bit r is rank r's predicate.
  __device__ unsigned int ballot(int predicate) const {
    unsigned int lane = __nvvm_read_ptx_sreg_laneid();
    return (__ballot_sync(mask(), predicate) >> (lane & ~(N - 1u))) & ((1u << N) - 1u);
  }
};

template <unsigned int N, class Parent>
static __device__ __forceinline__ thread_block_tile<N> tiled_partition(const Parent&) {
  return thread_block_tile<N>();
}

// The warp's active lanes at the call (coalesced_threads()), with the toolkit's semantics: rank r
// is the r-th active lane from lane 0; shfl/shfl_up/shfl_down take and give ranks, and a source
// rank outside the group reads the caller's own value (shfl_up/down) as the toolkit's do; ballot
// packs the bits in rank order. Written over the 4-lane warp (width 4), as the tiles are, so no
// 32-lane assumption is flagged; the toolkit's version (nvcc) passes width 32, which the lowering
// flags (docs/lowering.md, "32-lane assumptions").
class coalesced_group {
 public:
  __device__ coalesced_group() : mask_(__activemask()) {}
  __device__ void sync() const { __syncwarp(mask_); }
  __device__ unsigned int size() const { return __popc(mask_); }
  __device__ unsigned int num_threads() const { return __popc(mask_); }
  __device__ unsigned int thread_rank() const { return __popc(mask_ & __qgpu_lanemask_lt()); }
  __device__ unsigned int meta_group_rank() const { return 0; }
  __device__ unsigned int meta_group_size() const { return 1; }
  template <class T>
  __device__ T shfl(T var, int srcRank) const { return __shfl_sync(mask_, var, laneOf((unsigned int)srcRank), 4); }
  template <class T>
  __device__ T shfl_down(T var, unsigned int delta) const {
    unsigned int r = thread_rank() + delta;
    return __shfl_sync(mask_, var, r < size() ? laneOf(r) : __qgpu_laneid(), 4);
  }
  template <class T>
  __device__ T shfl_up(T var, unsigned int delta) const {
    unsigned int r = thread_rank();
    return __shfl_sync(mask_, var, delta <= r ? laneOf(r - delta) : __qgpu_laneid(), 4);
  }
  __device__ int any(int predicate) const { return __ballot_sync(mask_, predicate) != 0; }
  __device__ int all(int predicate) const { return __ballot_sync(mask_, predicate) == mask_; }
  // Bit r is rank r's predicate.
  __device__ unsigned int ballot(int predicate) const {
    unsigned int lanes = __ballot_sync(mask_, predicate), packed = 0, rank = 0;
    for (unsigned int lane = 0; lane < 4; ++lane) {
      if (mask_ >> lane & 1u) {
        packed |= (lanes >> lane & 1u) << rank;
        ++rank;
      }
    }
    return packed;
  }

 private:
  // The lane of rank r (the (r+1)-th set bit of the mask); 32 if there is none.
  __device__ unsigned int laneOf(unsigned int r) const {
    unsigned int lane = 32;
    unsigned int seen = 0;
    for (unsigned int l = 0; l < 4; ++l) {
      if (mask_ >> l & 1u) {
        if (seen == r && lane == 32) lane = l;
        ++seen;
      }
    }
    return lane;
  }
  unsigned int mask_;
};

static __device__ __forceinline__ coalesced_group coalesced_threads() { return coalesced_group(); }
static __device__ __forceinline__ void sync(const coalesced_group& g) { g.sync(); }

}  // namespace cooperative_groups
