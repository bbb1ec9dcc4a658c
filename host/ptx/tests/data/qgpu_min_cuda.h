// qgpu/host/ptx/tests/data/qgpu_min_cuda.h — a minimal CUDA dialect for clang-14 -nocudainc, used
// only to regenerate the PTX test samples in this folder (regen.sh). The project's real header is
// kernels/qgpu_cuda.h; this one exists so the parser tests do not depend on it.
// __syncthreads maps to __nvvm_barrier_sync(0): clang-14's bar.sync builtin is miscompiled at -O2
// (llvm/llvm-project#58626; ptx-subset.md section 11).
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __noinline__ __attribute__((noinline))
#define __forceinline__ __attribute__((always_inline))
struct qgpu_dim3_tid { __device__ unsigned get_x() const { return __nvvm_read_ptx_sreg_tid_x(); }
  __declspec(property(get = get_x)) unsigned x; };
struct qgpu_dim3_ntid { __device__ unsigned get_x() const { return __nvvm_read_ptx_sreg_ntid_x(); }
  __declspec(property(get = get_x)) unsigned x; };
struct qgpu_dim3_ctaid { __device__ unsigned get_x() const { return __nvvm_read_ptx_sreg_ctaid_x(); }
  __declspec(property(get = get_x)) unsigned x; };
struct qgpu_dim3_nctaid { __device__ unsigned get_x() const { return __nvvm_read_ptx_sreg_nctaid_x(); }
  __declspec(property(get = get_x)) unsigned x; };
extern const __device__ __attribute__((weak)) qgpu_dim3_tid threadIdx;
extern const __device__ __attribute__((weak)) qgpu_dim3_ntid blockDim;
extern const __device__ __attribute__((weak)) qgpu_dim3_ctaid blockIdx;
extern const __device__ __attribute__((weak)) qgpu_dim3_nctaid gridDim;
#define __syncthreads() __nvvm_barrier_sync(0)
#define __syncthreads_count(p) __nvvm_bar0_popc(p)
#define __syncthreads_and(p) __nvvm_bar0_and(p)
#define __syncthreads_or(p) __nvvm_bar0_or(p)
static __device__ __forceinline__ int atomicAdd(int* a, int v) { return __nvvm_atom_add_gen_i(a, v); }
static __device__ __forceinline__ unsigned atomicAdd(unsigned* a, unsigned v) {
  return __nvvm_atom_add_gen_i((int*)a, (int)v); }
static __device__ __forceinline__ int atomicMax(int* a, int v) { return __nvvm_atom_max_gen_i(a, v); }
static __device__ __forceinline__ int atomicMin(int* a, int v) { return __nvvm_atom_min_gen_i(a, v); }
static __device__ __forceinline__ int atomicCAS(int* a, int c, int v) {
  return __nvvm_atom_cas_gen_i(a, c, v); }
static __device__ __forceinline__ int atomicExch(int* a, int v) { return __nvvm_atom_xchg_gen_i(a, v); }
static __device__ __forceinline__ unsigned atomicInc(unsigned* a, unsigned v) {
  return __nvvm_atom_inc_gen_ui(a, v); }
static __device__ __forceinline__ int __shfl_down_sync(unsigned m, int v, unsigned d, int w = 32) {
  return __nvvm_shfl_sync_down_i32(m, v, d, ((32 - w) << 8) | 0x1f); }
static __device__ __forceinline__ int __shfl_up_sync(unsigned m, int v, unsigned d, int w = 32) {
  return __nvvm_shfl_sync_up_i32(m, v, d, (32 - w) << 8); }
static __device__ __forceinline__ int __shfl_xor_sync(unsigned m, int v, int d, int w = 32) {
  return __nvvm_shfl_sync_bfly_i32(m, v, d, ((32 - w) << 8) | 0x1f); }
static __device__ __forceinline__ int __shfl_sync(unsigned m, int v, int l, int w = 32) {
  return __nvvm_shfl_sync_idx_i32(m, v, l, ((32 - w) << 8) | 0x1f); }
static __device__ __forceinline__ unsigned __ballot_sync(unsigned m, int p) {
  return __nvvm_vote_ballot_sync(m, p); }
static __device__ __forceinline__ int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
static __device__ __forceinline__ int __all_sync(unsigned m, int p) { return __nvvm_vote_all_sync(m, p); }
#define __popc(x) __builtin_popcount(x)
