// qgpu/gen/cuda_gen.h — random CUDA kernels that carry their own expectations (issue 9, item 1,
// the first generator), Csmith / YARPGen style.
//
// Every probability and limit is a field of `CudaPolicy` (one X-macro table,
// QGPU_CUDAGEN_POLICY_FIELDS); a case is a pure function of (generator version, policy, seed) and
// its file says so in a `note:` line: `qgpu-gen cuda v6 seed=S policy: maxTopStmts=5 ...`.
//
// The output is a kernel file (kernels/README.md's format) that runs through the normal harness
// (`qgpu run FILE.cu`, kernels::parseKernelText):
//   __global__ void NAME(const unsigned* in, unsigned* out, unsigned* acc, unsigned k)
// `in` (16 words) is read-only, `out` gives each thread (global id g) its own `slots` words from
// g * slots, `acc` (8 words) takes integer atomics: each word has ONE operation (add, sub, min,
// max (unsigned or signed), or, and, xor of an expression; inc, dec, exch or CAS of the word's one
// constant operand) that every atomic on it uses, so the order of the atomics cannot matter (an
// inc/dec/exch/CAS with fixed operands is one function f, and n of them give f^n(init)).
// The body: local `unsigned v0..` (each initialised at its declaration), assignments, stores,
// atomics, nested divergent if/else, loops `for (unsigned iN = 0; iN < E % (T + 1); ++iN)` (at most
// T trips whatever E is, data-dependent per thread), early returns `if (E) return;`, calls of
// pure `__device__` helpers (some `__noinline__`: a .func and a call in the PTX; since v6 some
// filling a local `unsigned t[4]` read at data-dependent indices: a stack frame), and at the top
// level only, while no early return has been generated yet (so every thread of the CTA is live
// and the control flow is uniform): a shared-memory exchange through two `__syncthreads()`,
// `__syncthreads_count/and/or`, and in blocks of exactly 4 threads width-4 shuffles and votes
// with mask 0xf (the same on a 32-lane GPU and on the 4-lane machine).
// Since v2 also: typed expressions and locals `w0..` of 64-bit and narrow types (long long,
// unsigned long long, short, unsigned short, signed char, unsigned char; the typed section below)
// read back into the 32-bit world as their low or high word; at the top level, loops whose trip
// count is uniform across the CTA (`E % (T + 1)` with E free of variables, counters and
// threadIdx.x) with a shared exchange through __syncthreads on every trip (`sh[B]` with two
// barriers a trip, or `sb[2B]` double-buffered by trip parity with one, and a barrier after the
// loop); and shared-atomic regions: thread 0 initialises `sa[0..3]`, a barrier, then per-thread
// (divergent) code with atomicAdd/Or/Xor/And/Min/Max (unsigned, and signed through `(int*)`) /
// Exch on sa (one op per word; every Exch of a word writes its one CTA-uniform value), a barrier,
// a copy-out `vX = sa[(threadIdx.x + d) % 4]`, and a barrier. No return inside either.
// Since v4 also: every name of the dialect header kernels/qgpu_cuda.h that has a defined meaning
// on both the machine and a GPU (cudaDialectCoverage: umin/umax, CUDA's mixed min/max overloads,
// __[u]mul64hi, atomicSub/Inc/Dec/Exch/CAS and int atomicMin/Max on acc, __threadfence*,
// __syncwarp(0xf) at the top level of a block of 4, __forceinline__ and __launch_bounds__), and
// where the launch leaves room in the 126 words, 64-bit and sub-word array parameters
// `const long long* in64, unsigned long long* q, T64* o64, T8* o8` (CudaCase::wide): typed loads
// `in64[E & 3u]`, each thread's own `o64[g]` / `o8[g]` stored (`= (T)E`) and loaded back, and
// 64-bit atomicAdd/And/Or/Xor/Exch on q (one op per element; Exch with the element's constant).
//
// UB-free by construction: all arithmetic is unsigned (signed operations convert to int and back,
// which C++20 defines as modular); shift amounts are masked `& 31u`; divisors are `(x | 1u)`
// (unsigned) or `((x & 255u) | 1u)` (signed: 1..255, never 0 or -1); `abs` gets `(x | 1u)` (never
// INT_MIN); `__byte_perm` selectors are masked `& 0x7777u` (no sign-replicate mode); loads index
// `in[x & 15u]`; stores index the thread's own slots; shared slots are written by their own
// thread before a barrier and read by others after it, and a second barrier ends the exchange
// (or the next trip writes the other half of sb[], and a barrier ends the loop); atomic results
// are never read, and sa[] is read only after the barrier that ends the region's atomics;
// in64 is read-only and indexed `& 3u`, o64[g] / o8[g] are touched by thread g only (byte and
// halfword stores are single-element stores on a GPU and lane-serial st.b8/b16 on the machine),
// q's atomics are one commutative op (or one constant's Exch) per element, and acc's
// inc/dec/exch/CAS use the word's constants, so n of them are f^n(init) in any order.
//
// The expectation: the generator evaluates its own AST (evalOp below, and a per-thread walk of the
// statements; threads run statement by statement at the top level, which is exact because nested
// statements only touch their own thread's state, their own `out` slots and commutative atomics),
// never through qgpu's compilers, lowering or interpreter. The file's `expect:` lines are that.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::gen {

inline constexpr int kCudaGeneratorVersion = 6;  // bump when (policy, seed) gives another case

// X(type, name, default, "one-line meaning")
#define QGPU_CUDAGEN_POLICY_FIELDS(X)                                                              \
  /* ---- Shape ---- */                                                                            \
  X(int, maxTopStmts, 4, "top-level statements after the declarations (1..16)")                    \
  X(int, maxDepth, 2, "nesting of if/else arms and loop bodies (0: flat)")                         \
  X(int, maxBlockStmts, 2, "statements in one arm or loop body (1..8)")                            \
  X(int, maxExprDepth, 2, "depth of an expression tree (0: leaves only, at most 6)")               \
  X(int, maxVars, 3, "local unsigned variables v0.. (1..8)")                                       \
  X(int, maxHelpers, 1, "__device__ helper functions (0..4)")                                      \
  X(double, noinlineProb, 0.3, "a helper is __noinline__")                                         \
  X(double, forceinlineProb, 0.2, "a helper that is not __noinline__ is __forceinline__")          \
  X(double, helperTableProb, 0.3, "a helper fills a local t[4] and reads it at data-dependent indices") \
  X(double, launchBoundsProb, 0.2, "the kernel has __launch_bounds__(blockX)")                     \
  X(uint32_t, maxTrips, 3, "a loop runs 0..maxTrips times (1..8)")                                 \
  X(double, elseProb, 0.5, "an if has an else arm")                                                \
  /* ---- Statement kinds (relative weights) ---- */                                               \
  X(uint32_t, wAssign, 5, "vX = E")                                                                \
  X(uint32_t, wStore, 3, "out[own slot] = E")                                                      \
  X(uint32_t, wAtomic, 1, "atomic{Add,Min,Max,Or,And,Xor}(&acc[w], E), result unused")             \
  X(uint32_t, wIf, 2, "if (E) {...} [else {...}], divergent")                                      \
  X(uint32_t, wLoop, 1, "a loop with a data-dependent trip count 0..maxTrips")                     \
  X(uint32_t, wReturn, 1, "if (E) return; (ends collectives for the rest of the kernel)")          \
  X(uint32_t, wShared, 1, "a shared-memory exchange through __syncthreads (top level)")            \
  X(uint32_t, wSyncReduce, 1, "__syncthreads_count/and/or (top level)")                            \
  X(uint32_t, wWarp, 1, "a width-4 shuffle or vote (top level, block of 4)")                       \
  X(uint32_t, wTypedAssign, 2, "wN = typed expression (converted to wN's type), when maxTypedVars > 0") \
  X(uint32_t, wBarrierLoop, 1, "a uniform loop, a shared exchange through __syncthreads per trip (top)") \
  X(uint32_t, wSharedAtomic, 1, "atomics on __shared__ sa[0..3], a barrier, a copy-out (top level)")   \
  X(uint32_t, wFence, 1, "__threadfence[_block|_system](); __syncwarp(0xf) at the top of a 4-block") \
  /* ---- Expression families (relative weights) ---- */                                           \
  X(uint32_t, wArith, 4, "+ - * & | ^ ~ and unsigned negation")                                    \
  X(uint32_t, wDiv, 1, "/ % unsigned and signed, by a divisor that is never 0 or -1")              \
  X(uint32_t, wShift, 2, "<< >> (unsigned and signed) by an amount masked to 0..31")               \
  X(uint32_t, wCompare, 2, "< <= > >= (unsigned, signed) == != && || ! ?:")                        \
  X(uint32_t, wBuiltin, 2, "min max abs __popc __clz __ffs __brev __byte_perm __[u]mulhi ...")     \
  X(uint32_t, wCall, 1, "a call of a __device__ helper")                                           \
  X(uint32_t, wTyped, 2, "a 64-bit/narrow typed expression, read back as its low or high word")     \
  X(int, maxTypedVars, 2, "typed locals w0.. (long long, unsigned long long, short, ...; 0..4)")     \
  X(double, leafProb, 0.3, "an expression above depth 0 is a leaf anyway")                         \
  X(double, smallConstProb, 0.7, "a constant is 0..16 rather than any 32-bit value")               \
  /* ---- Launch ---- */                                                                           \
  X(uint32_t, maxGrid, 2, "CTAs, 1..maxGrid (<= 16)")                                              \
  X(uint32_t, maxBlockX, 8, "threads per CTA, 1..maxBlockX (<= 16)")                               \
  X(double, warpBlockProb, 0.4, "the block is exactly 4 threads (warp ops possible)")              \
  X(uint32_t, maxSlots, 2, "out words per thread, 1..maxSlots")                                   \
  /* ---- 64-bit and sub-word arrays (v4; only where the launch leaves room in memory) ---- */  \
  X(double, wideArraysProb, 0.6, "the kernel has the in64/q/o64/o8 array parameters")              \
  X(uint32_t, wWideStore, 2, "o64[g] = (T64)E or o8[g] = (T8)E (own element), with the arrays")     \
  X(uint32_t, wAtomic64, 1, "atomic{Add,And,Or,Xor,Exch}(&q[j], 64-bit E), with the arrays")

struct CudaPolicy {
#define QGPU_CUDAGEN_POLICY_MEMBER(type, name, def, doc) type name = def;
  QGPU_CUDAGEN_POLICY_FIELDS(QGPU_CUDAGEN_POLICY_MEMBER)
#undef QGPU_CUDAGEN_POLICY_MEMBER
  bool operator==(const CudaPolicy&) const = default;
};

Status validate(const CudaPolicy& policy);  // Usage when a field is out of its range

std::string describeCuda(const CudaPolicy& policy, uint64_t seed);  // "qgpu-gen cuda v6 seed=..."
Expected<CudaPolicy> parseCudaPolicy(std::string_view text);         // "name=value ..."

// ---- The expression operators: one table (name, family, arity, C spelling with %0..%2) ----
#define QGPU_CUDAGEN_OPS(X)                                                 \
  X(Add, Arith, 2, "(%0 + %1)")                                             \
  X(Sub, Arith, 2, "(%0 - %1)")                                             \
  X(Mul, Arith, 2, "(%0 * %1)")                                             \
  X(And, Arith, 2, "(%0 & %1)")                                             \
  X(Or, Arith, 2, "(%0 | %1)")                                              \
  X(Xor, Arith, 2, "(%0 ^ %1)")                                             \
  X(Not, Arith, 1, "(~%0)")                                                 \
  X(Neg, Arith, 1, "(0u - %0)")                                             \
  X(DivU, Div, 2, "(%0 / (%1 | 1u))")                                       \
  X(RemU, Div, 2, "(%0 % (%1 | 1u))")                                       \
  X(DivS, Div, 2, "(unsigned)((int)%0 / (int)((%1 & 255u) | 1u))")          \
  X(RemS, Div, 2, "(unsigned)((int)%0 % (int)((%1 & 255u) | 1u))")          \
  X(Shl, Shift, 2, "(%0 << (%1 & 31u))")                                    \
  X(ShrU, Shift, 2, "(%0 >> (%1 & 31u))")                                   \
  X(ShrS, Shift, 2, "(unsigned)((int)%0 >> (%1 & 31u))")                    \
  X(LtU, Compare, 2, "(unsigned)(%0 < %1)")                                 \
  X(LeU, Compare, 2, "(unsigned)(%0 <= %1)")                                \
  X(GtU, Compare, 2, "(unsigned)(%0 > %1)")                                 \
  X(GeU, Compare, 2, "(unsigned)(%0 >= %1)")                                \
  X(LtS, Compare, 2, "(unsigned)((int)%0 < (int)%1)")                       \
  X(LeS, Compare, 2, "(unsigned)((int)%0 <= (int)%1)")                      \
  X(GtS, Compare, 2, "(unsigned)((int)%0 > (int)%1)")                       \
  X(GeS, Compare, 2, "(unsigned)((int)%0 >= (int)%1)")                      \
  X(Eq, Compare, 2, "(unsigned)(%0 == %1)")                                 \
  X(Ne, Compare, 2, "(unsigned)(%0 != %1)")                                 \
  X(LAnd, Compare, 2, "(unsigned)(%0 && %1)")                               \
  X(LOr, Compare, 2, "(unsigned)(%0 || %1)")                                \
  X(LNot, Compare, 1, "(unsigned)(!%0)")                                    \
  X(Select, Compare, 3, "(%0 ? %1 : %2)")                                   \
  X(MinU, Builtin, 2, "min(%0, %1)")                                        \
  X(MaxU, Builtin, 2, "max(%0, %1)")                                        \
  X(MinS, Builtin, 2, "(unsigned)min((int)%0, (int)%1)")                    \
  X(MaxS, Builtin, 2, "(unsigned)max((int)%0, (int)%1)")                    \
  X(Abs, Builtin, 1, "(unsigned)abs((int)(%0 | 1u))")                       \
  X(Popc, Builtin, 1, "(unsigned)__popc(%0)")                               \
  X(Clz, Builtin, 1, "(unsigned)__clz((int)%0)")                            \
  X(Ffs, Builtin, 1, "(unsigned)__ffs((int)%0)")                            \
  X(Brev, Builtin, 1, "__brev(%0)")                                         \
  X(BytePerm, Builtin, 3, "__byte_perm(%0, %1, %2 & 0x7777u)")              \
  X(UMulHi, Builtin, 2, "__umulhi(%0, %1)")                                 \
  X(MulHi, Builtin, 2, "(unsigned)__mulhi((int)%0, (int)%1)")               \
  X(UMul24, Builtin, 2, "__umul24(%0, %1)")                                 \
  X(Mul24, Builtin, 2, "(unsigned)__mul24((int)%0, (int)%1)")               \
  X(USad, Builtin, 3, "__usad(%0, %1, %2)")                                 \
  X(Sad, Builtin, 3, "__sad((int)%0, (int)%1, %2)")                        \
  X(UMinFn, Builtin, 2, "umin(%0, %1)")                                     \
  X(UMaxFn, Builtin, 2, "umax(%0, %1)")                                     \
  X(MinMixed, Builtin, 2, "min((int)%0, %1)")                               \
  X(MaxMixed, Builtin, 2, "max(%0, (int)%1)")

enum class CudaOp : uint8_t {
#define QGPU_CUDAGEN_OP_ENUM(name, family, arity, spelling) name,
  QGPU_CUDAGEN_OPS(QGPU_CUDAGEN_OP_ENUM)
#undef QGPU_CUDAGEN_OP_ENUM
};
enum class CudaOpFamily : uint8_t { Arith, Div, Shift, Compare, Builtin };
struct CudaOpInfo {
  const char* name;
  CudaOpFamily family;
  int arity;
  const char* spelling;  // C with %0..%2 for the operands
};
std::span<const CudaOpInfo> cudaOpTable();
const CudaOpInfo& cudaOpInfo(CudaOp op);
// The generator's own meaning of an operator on the operands as the C spelling sees them (the
// masking of divisors, shift amounts and selectors included); unused operands are ignored.
uint32_t evalCudaOp(CudaOp op, uint32_t a, uint32_t b, uint32_t c);

// ---- The atomics on acc: one table (name, C function, operand cast, operand) ----
// Add..MaxS take an expression (they commute); Inc..Cas the word's constant operands, so every
// atomic on the word is one function f. X(name, function, cast, constantOperand)
#define QGPU_CUDAGEN_ATOMICS(X)        \
  X(Add, "atomicAdd", "", false)       \
  X(Min, "atomicMin", "", false)       \
  X(Max, "atomicMax", "", false)       \
  X(Or, "atomicOr", "", false)         \
  X(And, "atomicAnd", "", false)       \
  X(Xor, "atomicXor", "", false)       \
  X(Sub, "atomicSub", "", false)       \
  X(MinS, "atomicMin", "int", false)   \
  X(MaxS, "atomicMax", "int", false)   \
  X(Inc, "atomicInc", "", true)        \
  X(Dec, "atomicDec", "", true)        \
  X(Exch, "atomicExch", "", true)      \
  X(Cas, "atomicCAS", "", true)
enum class CudaAtomic : uint8_t {
#define QGPU_CUDAGEN_ATOMIC_ENUM(name, fn, cast, constant) name,
  QGPU_CUDAGEN_ATOMICS(QGPU_CUDAGEN_ATOMIC_ENUM)
#undef QGPU_CUDAGEN_ATOMIC_ENUM
};
struct CudaAtomicInfo {
  const char* name;
  const char* function;
  const char* cast;       // "int": the word as (int*) and the operand as (int)
  bool constantOperand;   // the operand is the word's constant (Cas: compare and value)
};
std::span<const CudaAtomicInfo> cudaAtomicTable();
// The word after one atomic: `old` the word, `v` the operand, `cmp` Cas's compare value.
uint32_t evalCudaAtomic(CudaAtomic op, uint32_t old, uint32_t v, uint32_t cmp);

// ---- Typed expressions: 64-bit and narrow integers with C++'s conversions ----
// A typed expression has a static C type (the table below); its value is held as 64 bits in
// canonical form: an unsigned type's value zero-extended, a signed type's sign-extended (so a
// conversion to any type is `canonical(to, bits)`, C++20's modular rule, which the compilers
// implement for the implementation-defined cases of C++14/17 too). Operands go through the
// integer promotions (every narrow type to int) and the usual arithmetic conversions
// (`commonType`). UB-free by construction, YARPGen's way: the generator evaluates the whole
// case; every signed add/sub/mul/neg whose mathematical result leaves its type, and every left
// shift of a negative signed value or past the type's maximum, is flagged, printed from then on
// in its wrapping form `(C)((unsigned C)a op (unsigned C)b)` (same value, modular), and the case
// evaluated again until nothing is flagged. Divisors are `(b | 1)` (unsigned common type) or
// `((b & 255) | 1)` (signed: 1..255), shift amounts `b & (width - 1)` of the promoted left type.
// X(enum, spelling, bits, signed)
#define QGPU_CUDAGEN_CTYPES(X)                 \
  X(U32, "unsigned", 32, false)                \
  X(S32, "int", 32, true)                      \
  X(U64, "unsigned long long", 64, false)      \
  X(S64, "long long", 64, true)                \
  X(U16, "unsigned short", 16, false)          \
  X(S16, "short", 16, true)                    \
  X(U8, "unsigned char", 8, false)             \
  X(S8, "signed char", 8, true)

enum class CType : uint8_t {
#define QGPU_CUDAGEN_CTYPE_ENUM(name, spelling, bits, isSigned) name,
  QGPU_CUDAGEN_CTYPES(QGPU_CUDAGEN_CTYPE_ENUM)
#undef QGPU_CUDAGEN_CTYPE_ENUM
};
inline constexpr int kNumCTypes = 8;
struct CTypeInfo {
  const char* spelling;
  int bits;
  bool isSigned;
};
const CTypeInfo& ctypeInfo(CType t);
CType promoted(CType t);               // the integer promotions: narrow types -> int
CType commonType(CType a, CType b);    // the usual arithmetic conversions (after promotion)
uint64_t canonical(CType t, uint64_t bits);  // the value converted to t, in canonical form

// X(name, arity, C operator or builtin)
#define QGPU_CUDAGEN_TYPED_OPS(X)   \
  X(Add, 2, "+")                    \
  X(Sub, 2, "-")                    \
  X(Mul, 2, "*")                    \
  X(And, 2, "&")                    \
  X(Or, 2, "|")                     \
  X(Xor, 2, "^")                    \
  X(Div, 2, "/")                    \
  X(Rem, 2, "%")                    \
  X(Shl, 2, "<<")                   \
  X(Shr, 2, ">>")                   \
  X(Lt, 2, "<")                     \
  X(Le, 2, "<=")                    \
  X(Gt, 2, ">")                     \
  X(Ge, 2, ">=")                    \
  X(Eq, 2, "==")                    \
  X(Ne, 2, "!=")                    \
  X(Not, 1, "~")                    \
  X(Neg, 1, "-")                    \
  X(Cast, 1, "(T)")                 \
  X(Select, 3, "?:")                \
  X(UMul64Hi, 2, "__umul64hi")      \
  X(Mul64Hi, 2, "__mul64hi")        \
  X(Popcll, 1, "__popcll")          \
  X(Clzll, 1, "__clzll")            \
  X(Ffsll, 1, "__ffsll")            \
  X(Brevll, 1, "__brevll")          \
  X(LlMin, 2, "llmin")              \
  X(LlMax, 2, "llmax")              \
  X(UllMin, 2, "ullmin")            \
  X(UllMax, 2, "ullmax")            \
  X(Llabs, 1, "llabs")
// The 64-bit builtins are those the dialect header declares, with CUDA's signatures: each operand
// converted to the parameter's type, (unsigned) long long. Since v4 __umul64hi and __mul64hi (the
// result of that type); since v5 __popcll (unsigned long long -> int: the set bits), __clzll
// (long long -> int: leading zeros, 64 for 0), __ffsll (long long -> int: 1 + the lowest set
// bit's index, 0 for 0), __brevll (unsigned long long: the bits reversed), llmin/llmax (long long),
// ullmin/ullmax (unsigned long long) and llabs (long long, printed `llabs(((long long)(a) | 1ll))`:
// the | 1 keeps it away from LLONG_MIN, whose absolute value is undefined). Before v5 the header
// lacked the last nine (v2's first campaign met them as clang-14 compile errors).

enum class TypedOp : uint8_t {
#define QGPU_CUDAGEN_TYPED_OP_ENUM(name, arity, spelling) name,
  QGPU_CUDAGEN_TYPED_OPS(QGPU_CUDAGEN_TYPED_OP_ENUM)
#undef QGPU_CUDAGEN_TYPED_OP_ENUM
};
struct TypedOpInfo {
  const char* name;
  int arity;
  const char* spelling;
};
std::span<const TypedOpInfo> typedOpTable();
struct CValue {
  CType type = CType::U32;
  uint64_t bits = 0;  // canonical for `type`
  bool operator==(const CValue&) const = default;
};
// The result type of `op` on operands of these types (`castTo`: Cast's target).
CType typedOpResult(TypedOp op, CType a, CType b, CType c, CType castTo);
// The generator's meaning of `op` as printed (divisor and shift-amount forms included; `wrap`:
// the wrapping form). `*ub` is set when the plain form would be undefined behaviour (signed
// overflow, a left shift of a negative value or past the maximum).
CValue evalTypedOp(TypedOp op, CValue a, CValue b, CValue c, CType castTo, bool wrap, bool* ub);

// ---- The dialect header's names and how the generator covers each (issue 9, item 1) ----
// Every name kernels/qgpu_cuda.h declares for kernels (functions, macros, device variables) has
// one row: emitted (the generator writes `name` into some cases under the default policy) or not,
// with the reason. gen/tests/cuda_gen_test.cpp reads the header and fails for a name without a
// row, and for an emitted row that no case shows.
struct DialectName {
  const char* name;
  bool emitted;
  const char* how;  // emitted: where; not emitted: why
};
std::span<const DialectName> cudaDialectCoverage();

// ---- A generated case ----
inline constexpr uint32_t kCudaInWords = 16, kCudaAccWords = 8;
// The wide arrays (v4): `const long long* in64` (kCudaIn64Elems, read-only, loaded as
// `in64[E & 3u]`), `unsigned long long* q` (kCudaQElems; each element has ONE 64-bit atomic op of
// add/and/or/xor/exch, exch with the element's one constant), `T64* o64` and `T8* o8` (T64 long
// long or unsigned long long, T8 one of the narrow types; element g belongs to thread g, which
// stores `(T)E` to it and loads it back). Each 64-bit array starts at an even word (8 bytes).
inline constexpr uint32_t kCudaIn64Elems = 4, kCudaQElems = 4;

struct CudaCase {
  std::string name;    // the kernel (== file stem): "rk<seed>" unless given
  std::string header;  // describeCuda(policy, seed)
  std::string text;    // the kernel file: header lines (expectations included) + the CUDA source
  uint32_t gridX = 1, blockX = 1, slots = 1;
  std::array<uint32_t, kCudaInWords> in{};
  std::array<uint32_t, kCudaAccWords> accInit{};
  uint32_t k = 0;
  std::vector<uint32_t> expectOut;                // gridX * blockX * slots words
  std::array<uint32_t, kCudaAccWords> expectAcc{};
  // Features of the case, for tests and summaries.
  bool hasShared = false, hasWarp = false, hasSyncReduce = false, hasReturn = false,
       hasLoop = false, hasCall = false, hasAtomic = false, hasTyped = false, hasBarrierLoop = false,
       hasSharedAtomic = false;
  int wrappedOps = 0;  // typed signed ops printed in their wrapping form (they would overflow)
  // The wide arrays (present when `wide`): in64's and q's values, o64's and o8's expectations.
  bool wide = false, hasWideStore = false, hasAtomic64 = false;
  CType t64 = CType::S64, t8 = CType::U8;  // o64's and o8's element types
  std::array<uint64_t, kCudaIn64Elems> in64{};
  std::array<uint64_t, kCudaQElems> qInit{}, expectQ{};
  std::vector<uint64_t> expectO64;  // one element per thread (canonical bits of t64)
  std::vector<uint64_t> expectO8;   // one element per thread (canonical bits of t8)
  // Memory layout (kernels::layout's, in parameter order from word 0): in, out, acc, then
  // (when wide) in64, q, o64 (each at an even word), o8.
  uint32_t outWord() const { return kCudaInWords; }
  uint32_t accWord() const { return kCudaInWords + static_cast<uint32_t>(expectOut.size()); }
  uint32_t in64Word() const { return (accWord() + kCudaAccWords + 1) & ~1u; }
  uint32_t qWord() const { return in64Word() + 2 * kCudaIn64Elems; }
  uint32_t o64Word() const { return qWord() + 2 * kCudaQElems; }
  uint32_t o8Word() const { return o64Word() + 2 * static_cast<uint32_t>(expectO64.size()); }
  uint32_t o8Words() const;  // the words o8 takes (its elements packed, little-endian)
  uint32_t endWord() const;  // one past the last word of the last array
  // The machine's global memory before and after, by the generator.
  std::array<uint32_t, 126> initialGlobal() const;
  std::array<uint32_t, 126> expectedGlobal() const;
  std::vector<uint32_t> params() const;  // in, out, acc [, in64, q, o64, o8] byte addresses; k
};

// The case for (policy, seed); Usage if the policy does not validate. `name` must be a C
// identifier (empty: "rk<seed>").
Expected<CudaCase> generateCuda(const CudaPolicy& policy, uint64_t seed, std::string name = "");

}  // namespace qgpu::gen
