// qgpu/kernels/qgpu_cuda.h — the qgpu CUDA dialect: what clang-14 needs to compile integer CUDA.
//
// Contract: the host's clang path compiles every kernel with
//   clang-14 -x cuda --cuda-device-only -nocudainc -nocudalib -Xclang -target-feature
//            -Xclang +ptx64 -include kernels/qgpu_cuda.h
// so no CUDA SDK header is read. This file declares exactly the subset of the CUDA device API the
// qgpu machine supports (integers only, 1-D launches): execution-space qualifiers, the built-in
// index variables, barriers, atomics, warp shuffles and votes, bit intrinsics and integer
// min/max/abs. nvcc never sees this file (it has its own headers); the same .cu must compile
// unchanged with both, so every name here has nvcc's spelling and signature.
//
// Each mapping below names the clang builtin it uses and, where it matters, why (see
// /work/shared/reference/ptx-subset.md §7-§11 for the PTX each one produces).
#pragma once

#if !defined(__clang__) || !defined(__CUDA__)
#error "qgpu_cuda.h is the clang-14 CUDA dialect header; nvcc uses its own headers"
#endif

// ---- Execution-space and function qualifiers (clang's CUDA attributes) ----
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
// `__noinline__` keeps a device function out of line: the PTX gets a .func and a call.uni.
#define __noinline__ __attribute__((noinline))
#define __forceinline__ __inline__ __attribute__((always_inline))
// `__launch_bounds__(maxThreads[, minBlocks])` -> clang's attribute (PTX `.maxntid`, `.minnctapersm`;
// the lowering ignores both: the launch line decides the block size).
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
// `__restrict__` is a clang keyword already (const __restrict__ loads become ld.global.nc).

#define __QGPU_DEVICE__ static __device__ __forceinline__

// ---- <cstdint> names, NULL and CUDA's `uint` ----
// The host C headers are on clang's path (only the CUDA SDK's are left out), so the fixed-width
// names come from <stdint.h> exactly as nvcc's headers bring them in; `uint` is glibc's
// <sys/types.h> typedef, which nvcc's headers include.
#include <stddef.h>
#include <stdint.h>
typedef unsigned int uint;

// ---- CUDA's integer vector types (vector_types.h): each aligned to its size, as nvcc's are, so
// an int4 load is one ld.v4.u32 and a misaligned one faults as on a GPU; make_* as nvcc's ----
#define __QGPU_VEC2(T, C, A)                                                         \
  struct __attribute__((aligned(A))) T##2 { C x, y; };                               \
  static __device__ __forceinline__ T##2 make_##T##2(C x, C y) { return T##2{x, y}; }
#define __QGPU_VEC4(T, C, A)                                                         \
  struct __attribute__((aligned(A))) T##4 { C x, y, z, w; };                         \
  static __device__ __forceinline__ T##4 make_##T##4(C x, C y, C z, C w) {           \
    return T##4{x, y, z, w};                                                         \
  }
__QGPU_VEC2(char, signed char, 2)
__QGPU_VEC4(char, signed char, 4)
__QGPU_VEC2(uchar, unsigned char, 2)
__QGPU_VEC4(uchar, unsigned char, 4)
__QGPU_VEC2(short, short, 4)
__QGPU_VEC4(short, short, 8)
__QGPU_VEC2(ushort, unsigned short, 4)
__QGPU_VEC4(ushort, unsigned short, 8)
__QGPU_VEC2(int, int, 8)
__QGPU_VEC4(int, int, 16)
__QGPU_VEC2(uint, unsigned int, 8)
__QGPU_VEC4(uint, unsigned int, 16)
#undef __QGPU_VEC2
#undef __QGPU_VEC4

// ---- Built-in index variables: threadIdx, blockIdx, blockDim, gridDim ----
// As in clang's own __clang_cuda_builtin_vars.h: each is an object whose .x/.y/.z are properties
// read through __nvvm_read_ptx_sreg_* (PTX mov.u32 %r, %tid.x etc.). Reading a property costs one
// special-register read; unused components cost nothing.
#define __QGPU_SREG_FIELD(FIELD, INTRINSIC)                                   \
  __declspec(property(get = __fetch_##FIELD)) unsigned int FIELD;             \
  static __device__ __forceinline__ unsigned int __fetch_##FIELD(void) {      \
    return INTRINSIC;                                                         \
  }

struct __qgpu_threadIdx_t {
  __QGPU_SREG_FIELD(x, __nvvm_read_ptx_sreg_tid_x())
  __QGPU_SREG_FIELD(y, __nvvm_read_ptx_sreg_tid_y())
  __QGPU_SREG_FIELD(z, __nvvm_read_ptx_sreg_tid_z())
};
struct __qgpu_blockIdx_t {
  __QGPU_SREG_FIELD(x, __nvvm_read_ptx_sreg_ctaid_x())
  __QGPU_SREG_FIELD(y, __nvvm_read_ptx_sreg_ctaid_y())
  __QGPU_SREG_FIELD(z, __nvvm_read_ptx_sreg_ctaid_z())
};
struct __qgpu_blockDim_t {
  __QGPU_SREG_FIELD(x, __nvvm_read_ptx_sreg_ntid_x())
  __QGPU_SREG_FIELD(y, __nvvm_read_ptx_sreg_ntid_y())
  __QGPU_SREG_FIELD(z, __nvvm_read_ptx_sreg_ntid_z())
};
struct __qgpu_gridDim_t {
  __QGPU_SREG_FIELD(x, __nvvm_read_ptx_sreg_nctaid_x())
  __QGPU_SREG_FIELD(y, __nvvm_read_ptx_sreg_nctaid_y())
  __QGPU_SREG_FIELD(z, __nvvm_read_ptx_sreg_nctaid_z())
};
#undef __QGPU_SREG_FIELD

extern const __device__ __qgpu_threadIdx_t threadIdx;
extern const __device__ __qgpu_blockIdx_t blockIdx;
extern const __device__ __qgpu_blockDim_t blockDim;
extern const __device__ __qgpu_gridDim_t gridDim;

// warpSize reads PTX's WARP_SZ, as nvcc's does (clang's own headers fold it to the constant 32):
// one source, one answer under both compilers — 4 on the qgpu machine, 32 on a GPU. The asm is
// not volatile, so repeated reads are one `mov.u32 %r, WARP_SZ`. Kernels that derive lane layouts
// from it run as 4-lane code here; the lowering flags those that assume 32 lanes
// (docs/lowering.md, "32-lane assumptions").
__QGPU_DEVICE__ int __qgpu_warp_size(void) {
  int size;
  asm("mov.u32 %0, WARP_SZ;" : "=r"(size));
  return size;
}
#define warpSize (__qgpu_warp_size())

// ---- Barriers ----
// __syncthreads() -> __nvvm_barrier_sync(0) (PTX `barrier.sync 0`), NOT clang's builtin
// __syncthreads (llvm.nvvm.barrier0): clang-14 at -O2 forwards __shared__ values across that one
// (llvm/llvm-project#58626). The barrier.sync intrinsic is handled as a memory barrier.
// A macro, because __syncthreads is a clang builtin that cannot be redeclared.
#define __syncthreads() __nvvm_barrier_sync(0)
// __syncthreads_count/and/or -> bar.red.{popc.u32,and.pred,or.pred} (no miscompile observed).
__QGPU_DEVICE__ int __syncthreads_count(int predicate) { return __nvvm_bar0_popc(predicate); }
__QGPU_DEVICE__ int __syncthreads_and(int predicate) { return __nvvm_bar0_and(predicate); }
__QGPU_DEVICE__ int __syncthreads_or(int predicate) { return __nvvm_bar0_or(predicate); }
// __syncwarp -> bar.warp.sync (needs +ptx64, passed by the driver).
__QGPU_DEVICE__ void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }

// ---- Atomics: __nvvm_atom_*_gen_* (generic address space; clang infers .global/.shared from
// the pointer's origin where it can). Return the old value, as in CUDA. ----
__QGPU_DEVICE__ int atomicAdd(int* address, int val) { return __nvvm_atom_add_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_add_gen_i((int*)address, (int)val);
}
// atomicSub is an atomic add of the negation (PTX has no atom.sub; nvcc does the same).
__QGPU_DEVICE__ int atomicSub(int* address, int val) {
  return __nvvm_atom_add_gen_i(address, (int)(0u - (unsigned int)val));
}
__QGPU_DEVICE__ unsigned int atomicSub(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_add_gen_i((int*)address, (int)(0u - val));
}
__QGPU_DEVICE__ int atomicExch(int* address, int val) { return __nvvm_atom_xchg_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicExch(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_xchg_gen_i((int*)address, (int)val);
}
__QGPU_DEVICE__ int atomicMin(int* address, int val) { return __nvvm_atom_min_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicMin(unsigned int* address, unsigned int val) {
  return __nvvm_atom_min_gen_ui(address, val);
}
__QGPU_DEVICE__ int atomicMax(int* address, int val) { return __nvvm_atom_max_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicMax(unsigned int* address, unsigned int val) {
  return __nvvm_atom_max_gen_ui(address, val);
}
// atomicInc/Dec: ((old >= val) ? 0 : old + 1) and ((old == 0 || old > val) ? val : old - 1).
// clang cannot infer the address space of these two builtins: the PTX stays generic
// (atom.inc.u32 [%rd]) with the pre-cvta pointer, which the qgpu machine treats as global.
__QGPU_DEVICE__ unsigned int atomicInc(unsigned int* address, unsigned int val) {
  return __nvvm_atom_inc_gen_ui(address, val);
}
__QGPU_DEVICE__ unsigned int atomicDec(unsigned int* address, unsigned int val) {
  return __nvvm_atom_dec_gen_ui(address, val);
}
__QGPU_DEVICE__ int atomicCAS(int* address, int compare, int val) {
  return __nvvm_atom_cas_gen_i(address, compare, val);
}
__QGPU_DEVICE__ unsigned int atomicCAS(unsigned int* address, unsigned int compare,
                                       unsigned int val) {
  return (unsigned int)__nvvm_atom_cas_gen_i((int*)address, (int)compare, (int)val);
}
__QGPU_DEVICE__ int atomicAnd(int* address, int val) { return __nvvm_atom_and_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicAnd(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_and_gen_i((int*)address, (int)val);
}
__QGPU_DEVICE__ int atomicOr(int* address, int val) { return __nvvm_atom_or_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicOr(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_or_gen_i((int*)address, (int)val);
}
__QGPU_DEVICE__ int atomicXor(int* address, int val) { return __nvvm_atom_xor_gen_i(address, val); }
__QGPU_DEVICE__ unsigned int atomicXor(unsigned int* address, unsigned int val) {
  return (unsigned int)__nvvm_atom_xor_gen_i((int*)address, (int)val);
}

// 64-bit (unsigned long long): atom.*.u64/.b64. The lowering splits add, exch, and, or and xor
// into one atomic per word (docs/lowering.md, "64-bit atomics"); 64-bit min, max and CAS do not
// split and are refused there, so they are not declared here.
__QGPU_DEVICE__ unsigned long long atomicAdd(unsigned long long* address, unsigned long long val) {
  return (unsigned long long)__nvvm_atom_add_gen_ll((long long*)address, (long long)val);
}
__QGPU_DEVICE__ unsigned long long atomicExch(unsigned long long* address, unsigned long long val) {
  return (unsigned long long)__nvvm_atom_xchg_gen_ll((long long*)address, (long long)val);
}
__QGPU_DEVICE__ unsigned long long atomicAnd(unsigned long long* address, unsigned long long val) {
  return (unsigned long long)__nvvm_atom_and_gen_ll((long long*)address, (long long)val);
}
__QGPU_DEVICE__ unsigned long long atomicOr(unsigned long long* address, unsigned long long val) {
  return (unsigned long long)__nvvm_atom_or_gen_ll((long long*)address, (long long)val);
}
__QGPU_DEVICE__ unsigned long long atomicXor(unsigned long long* address, unsigned long long val) {
  return (unsigned long long)__nvvm_atom_xor_gen_ll((long long*)address, (long long)val);
}

// ---- Warp shuffles: __nvvm_shfl_sync_{idx,up,down,bfly}_i32(mask, value, lane/delta, c) ----
// The PTX `c` operand packs the segment width: c = ((32 - width) << 8) | clamp, clamp = 0x1f for
// idx/down/xor and 0 for up (nvcc's formula). width defaults to 32 as in CUDA; qgpu kernels pass
// width 4 so that a real 32-lane GPU and the 4-lane machine agree.
#define __QGPU_SHFL_C(width, clamp) ((((32 - (width)) << 8)) | (clamp))
__QGPU_DEVICE__ int __shfl_sync(unsigned int mask, int var, int srcLane, int width = 32) {
  return __nvvm_shfl_sync_idx_i32(mask, var, srcLane, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_DEVICE__ unsigned int __shfl_sync(unsigned int mask, unsigned int var, int srcLane,
                                         int width = 32) {
  return (unsigned int)__nvvm_shfl_sync_idx_i32(mask, (int)var, srcLane,
                                                __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_DEVICE__ int __shfl_up_sync(unsigned int mask, int var, unsigned int delta, int width = 32) {
  return __nvvm_shfl_sync_up_i32(mask, var, (int)delta, __QGPU_SHFL_C(width, 0));
}
__QGPU_DEVICE__ unsigned int __shfl_up_sync(unsigned int mask, unsigned int var,
                                            unsigned int delta, int width = 32) {
  return (unsigned int)__nvvm_shfl_sync_up_i32(mask, (int)var, (int)delta,
                                               __QGPU_SHFL_C(width, 0));
}
__QGPU_DEVICE__ int __shfl_down_sync(unsigned int mask, int var, unsigned int delta,
                                     int width = 32) {
  return __nvvm_shfl_sync_down_i32(mask, var, (int)delta, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_DEVICE__ unsigned int __shfl_down_sync(unsigned int mask, unsigned int var,
                                              unsigned int delta, int width = 32) {
  return (unsigned int)__nvvm_shfl_sync_down_i32(mask, (int)var, (int)delta,
                                                 __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_DEVICE__ int __shfl_xor_sync(unsigned int mask, int var, int laneMask, int width = 32) {
  return __nvvm_shfl_sync_bfly_i32(mask, var, laneMask, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_DEVICE__ unsigned int __shfl_xor_sync(unsigned int mask, unsigned int var, int laneMask,
                                             int width = 32) {
  return (unsigned int)__nvvm_shfl_sync_bfly_i32(mask, (int)var, laneMask,
                                                 __QGPU_SHFL_C(width, 0x1f));
}
#undef __QGPU_SHFL_C

// ---- Warp votes: __nvvm_vote_{ballot,any,all}_sync (PTX vote.sync.*; needs +ptx64) ----
__QGPU_DEVICE__ unsigned int __ballot_sync(unsigned int mask, int predicate) {
  return __nvvm_vote_ballot_sync(mask, predicate != 0);
}
__QGPU_DEVICE__ int __any_sync(unsigned int mask, int predicate) {
  return __nvvm_vote_any_sync(mask, predicate != 0);
}
__QGPU_DEVICE__ int __all_sync(unsigned int mask, int predicate) {
  return __nvvm_vote_all_sync(mask, predicate != 0);
}
// __activemask has no clang-14 builtin: inline PTX, as clang's own header does.
__QGPU_DEVICE__ unsigned int __activemask(void) {
  unsigned int mask;
  asm volatile("activemask.b32 %0;" : "=r"(mask));
  return mask;
}

// ---- Bit intrinsics: clang's generic builtins (the __nvvm_popc_i family needs libdevice) ----
__QGPU_DEVICE__ int __popc(unsigned int x) { return __builtin_popcount(x); }  // popc.b32
// __builtin_clz(0) is undefined; the guard folds into clz.b32 (which gives 32 for 0).
__QGPU_DEVICE__ int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
__QGPU_DEVICE__ int __ffs(int x) { return __builtin_ffs(x); }  // 1-based lowest set bit, 0 for 0
__QGPU_DEVICE__ unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
// The 64-bit siblings, with CUDA's signatures: popc.b64, clz.b64 (64 for 0), __ffsll as clang's
// popc/ctz sequence (nvcc: neg/and/clz.b64), brev.b64.
__QGPU_DEVICE__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__QGPU_DEVICE__ int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
__QGPU_DEVICE__ int __ffsll(long long x) { return __builtin_ffsll(x); }  // 1-based, 0 for 0
__QGPU_DEVICE__ unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
// __byte_perm(x, y, s) -> prmt.b32: result byte i = byte s[4i+2:4i] of the 8-byte value {y, x}.
__QGPU_DEVICE__ unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  return __nvvm_prmt(x, y, s);
}

// ---- Integer multiply and difference intrinsics: clang's __nvvm_* builtins, which emit the same
// instructions as nvcc's (mul.hi.{u,s}32, mul24.lo.{u,s}32, sad.{u,s}32). ----
__QGPU_DEVICE__ unsigned int __umulhi(unsigned int x, unsigned int y) { return __nvvm_mulhi_ui(x, y); }
__QGPU_DEVICE__ int __mulhi(int x, int y) { return __nvvm_mulhi_i(x, y); }
// The high 64 bits of the 128-bit product (mul.hi.{u,s}64).
__QGPU_DEVICE__ unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return __nvvm_mulhi_ull(x, y);
}
__QGPU_DEVICE__ long long __mul64hi(long long x, long long y) { return __nvvm_mulhi_ll(x, y); }
// Low 32 bits of the product of the low 24 bits (sign-extended from bit 23 for __mul24).
__QGPU_DEVICE__ unsigned int __umul24(unsigned int x, unsigned int y) { return __nvvm_mul24_ui(x, y); }
__QGPU_DEVICE__ int __mul24(int x, int y) { return __nvvm_mul24_i(x, y); }
// |x - y| + z (z + the absolute difference; wraps modulo 2^32).
__QGPU_DEVICE__ unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) {
  return __nvvm_sad_ui(x, y, z);
}
__QGPU_DEVICE__ unsigned int __sad(int x, int y, unsigned int z) {
  return (unsigned int)__nvvm_sad_i(x, y, (int)z);
}

// ---- Memory fences: membar.cta / membar.gl / membar.sys. The lowering drops them: the qgpu
// machine is sequentially consistent (docs/lowering.md). ----
__QGPU_DEVICE__ void __threadfence_block(void) { __nvvm_membar_cta(); }
__QGPU_DEVICE__ void __threadfence(void) { __nvvm_membar_gl(); }
__QGPU_DEVICE__ void __threadfence_system(void) { __nvvm_membar_sys(); }

// ---- Lane masks: the PTX special registers (inline PTX, as clang has no builtins for them) ----
#define __QGPU_LANEMASK(NAME)                                       \
  __QGPU_DEVICE__ unsigned int __qgpu_lanemask_##NAME(void) {      \
    unsigned int mask;                                             \
    asm("mov.u32 %0, %%lanemask_" #NAME ";" : "=r"(mask));         \
    return mask;                                                   \
  }
__QGPU_LANEMASK(eq)
__QGPU_LANEMASK(lt)
__QGPU_LANEMASK(le)
__QGPU_LANEMASK(gt)
__QGPU_LANEMASK(ge)
#undef __QGPU_LANEMASK
// The lane id (PTX %laneid).
__QGPU_DEVICE__ unsigned int __qgpu_laneid(void) { return __nvvm_read_ptx_sreg_laneid(); }

// ---- Integer min/max/abs, with CUDA's overloads (mixed signedness compares as unsigned) ----
__QGPU_DEVICE__ int min(int a, int b) { return a < b ? a : b; }
__QGPU_DEVICE__ unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
__QGPU_DEVICE__ unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
__QGPU_DEVICE__ unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
__QGPU_DEVICE__ int max(int a, int b) { return a > b ? a : b; }
__QGPU_DEVICE__ unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
__QGPU_DEVICE__ unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
__QGPU_DEVICE__ unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
__QGPU_DEVICE__ int abs(int a) { return __builtin_abs(a); }  // abs.s32; abs(INT_MIN) = INT_MIN
__QGPU_DEVICE__ unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
__QGPU_DEVICE__ unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
// The 64-bit siblings (CUDA's names): min/max.s64, min/max.u64, abs.s64 (llabs(LLONG_MIN) = LLONG_MIN).
__QGPU_DEVICE__ long long llmin(long long a, long long b) { return a < b ? a : b; }
__QGPU_DEVICE__ long long llmax(long long a, long long b) { return a > b ? a : b; }
__QGPU_DEVICE__ unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
__QGPU_DEVICE__ unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
__QGPU_DEVICE__ long long llabs(long long a) { return __builtin_llabs(a); }

#undef __QGPU_DEVICE__
