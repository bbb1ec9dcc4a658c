// qgpu/gen/ptx_gen.h — random PTX kernels in the supported subset, in clang-14's or nvcc 13's
// spelling (issue 9, item 1, the second generator), and the property every case must have.
//
// YARPGen style, as gen/program_gen.h: every probability and limit is a field of `PtxPolicy` (one
// X-macro table, QGPU_PTXGEN_POLICY_FIELDS), a case is a pure function of (generator version,
// policy, seed), and the first line of every generated file is `describePtx(policy, seed)`:
//   // qgpu-gen ptx v2 seed=S policy: maxRegions=4 ...
//
// The kernel: `.entry gen(.param .u64 in, .param .u64 out, .param .u64 acc, .param .u32 k)`;
// `in` is read-only (16 words), `out` gives each thread (global id g) its own `slots` words,
// `acc` (8 words) takes commutative atomics, one word per operation. The body is a sequence of regions — straight code,
// if, if-else, counted loops (to maxDepth), and at the top level only: shared-memory exchanges
// through a barrier, barrier reductions (bar.red.popc/and/or), warp shuffles and votes (only when blockX is a multiple of 4), early exits.
//
// By construction:
//   - ptxas-valid (the `tools` test gen_ptx_ptxas_test runs ptxas -arch=sm_90 on a few hundred);
//   - free of undefined and unspecified behaviour: every register is written on every path
//     before it is read (values written inside an arm or a loop body stay there, unless they
//     overwrite a register of the enclosing scope); loads index `in` by `x & 15`, stores go to the
//     thread's own `out` slots, atomics (add/and/or/xor/min/max, results unused) each to its operation's own `acc` word:
//     in-bounds, race-free and order-independent; divisors are `x | 1` (unsigned) or
//     `(x & 255) | 1` (signed: never 0 or -1); shared slots are written once by their thread and
//     read by others only after a bar.sync; barriers and warp ops sit in uniform control flow with
//     every lane live (none after an early exit), warp ops only in full 4-lane warps;
//   - terminating: every loop has its own counter register, set to 0..maxTrips before the loop,
//     tested at its head, decremented in its latch and written by nothing else.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::gen {

inline constexpr int kPtxGeneratorVersion = 2;  // bump when (policy, seed) gives another case

enum class PtxDialect : uint8_t { Clang, Nvcc };
const char* dialectName(PtxDialect d);  // "clang" / "nvcc"

// X(type, name, default, "one-line meaning")
#define QGPU_PTXGEN_POLICY_FIELDS(X)                                                               \
  /* ---- Shape ---- */                                                                            \
  X(int, maxRegions, 5, "top-level regions (1..)")                                                 \
  X(int, maxDepth, 2, "nesting of if arms and loop bodies (0: flat)")                              \
  X(int, maxArmRegions, 2, "regions in one arm or loop body (1..)")                                \
  X(int, minOps, 1, "random instructions per straight region, at least")                           \
  X(int, maxOps, 6, "random instructions per straight region, at most")                            \
  X(uint32_t, maxTrips, 3, "a loop runs 0..maxTrips times (data-dependent per thread)")            \
  /* ---- Region kinds (relative weights) ---- */                                                  \
  X(uint32_t, wStraight, 4, "weight of straight code")                                             \
  X(uint32_t, wIf, 2, "weight of if-then")                                                         \
  X(uint32_t, wIfElse, 2, "weight of if-then-else")                                                \
  X(uint32_t, wLoop, 2, "weight of a counted loop")                                                \
  X(uint32_t, wShared, 1, "weight of a shared-memory exchange through bar.sync (top level)")       \
  X(double, barRedProb, 0.3, "a shared region is bar.red.{popc,and,or} instead (top level)")       \
  X(uint32_t, wWarp, 1, "weight of a shuffle or vote (top level, full warps)")                     \
  X(uint32_t, wEarlyExit, 1, "weight of an early exit of some threads (top level)")                \
  /* ---- Instruction families (relative weights) ---- */                                          \
  X(uint32_t, wArith, 6, "add sub mul.lo mad.lo neg abs min max")                                  \
  X(uint32_t, wLogic, 4, "and or xor not")                                                         \
  X(uint32_t, wShift, 3, "shl shr.u shr.s by constants and registers")                             \
  X(uint32_t, wDiv, 1, "div/rem .u32/.s32 by a divisor that is never 0 or -1")                     \
  X(uint32_t, wBits, 2, "popc clz brev bfe prmt shf mul.hi")                                       \
  X(uint32_t, wWide, 2, "64-bit chains: mul.wide, cvt, add.s64, shl/shr.u64, back to 32 bits")     \
  X(uint32_t, wHalf, 1, "16-bit chains: cvt.u16.u32, add/mul.lo.s16, back to 32 bits")             \
  X(uint32_t, wSelect, 2, "setp + selp")                                                           \
  X(uint32_t, wLoad, 2, "ld.global of in[x & 15]")                                                 \
  X(uint32_t, wStore, 2, "st.global to one of the thread's own out slots")                         \
  X(uint32_t, wAtomic, 1, "an atom.global on its operation's acc word (result unused)")            \
  /* ---- Operands ---- */                                                                         \
  X(double, immProb, 0.3, "a source is an immediate")                                              \
  X(double, smallImmProb, 0.7, "an immediate is in -16..16 rather than any 32-bit value")          \
  X(double, freshProb, 0.6, "a result goes to a fresh register rather than an existing one")       \
  X(double, guardProb, 0.05, "an instruction overwriting an existing register is predicated")      \
  X(double, ncProb, 0.3, "a load is ld.global.nc")                                                 \
  X(double, subWordProb, 0.2, "a load is ld.global.{u8,s8,u16,s16} of a part of the word")         \
  X(uint32_t, minWideShift, 0,                                                                     \
    "shr.u64 amounts are minWideShift..63 (0 was corpus/bugs/shr64-by-zero, fixed)")               \
  /* ---- Launch ---- */                                                                           \
  X(uint32_t, maxGrid, 2, "CTAs, 1..maxGrid")                                                      \
  X(uint32_t, maxBlockX, 8, "threads per CTA, 1..maxBlockX (<= 16)")                               \
  X(uint32_t, maxSlots, 3, "out words per thread, at most (fewer when memory is short)")

struct PtxPolicy {
#define QGPU_PTXGEN_POLICY_MEMBER(type, name, def, doc) type name = def;
  QGPU_PTXGEN_POLICY_FIELDS(QGPU_PTXGEN_POLICY_MEMBER)
#undef QGPU_PTXGEN_POLICY_MEMBER
  bool operator==(const PtxPolicy&) const = default;
};

Status validate(const PtxPolicy& policy);  // Usage when a field is out of its range

struct PtxCase {
  std::string ptx;                      // the module; first line: "// " + header
  std::string header;                   // describePtx(policy, seed) + " dialect=..."
  PtxDialect dialect = PtxDialect::Nvcc;
  uint32_t gridX = 1, blockX = 1;
  std::array<uint32_t, 126> global{};   // initial global memory: in, out (zeros), acc
  std::vector<uint32_t> params;         // in, out, acc byte addresses; the scalar k
  uint32_t inWord = 0, outWord = 0, accWord = 0, slots = 0;
};

// The case for (policy, seed, dialect); Usage if the policy does not validate.
Expected<PtxCase> generatePtx(const PtxPolicy& policy, uint64_t seed, PtxDialect dialect);

std::string describePtx(const PtxPolicy& policy, uint64_t seed);
Expected<PtxPolicy> parsePtxPolicy(std::string_view text);  // "name=value ..." (as describePtx)

// ---- The property: parse -> lower -> interpret equals the PTX evaluator ----
enum class PtxVerdict : uint8_t {
  Match,    // both paths ran to the end and their final global memories are equal
  Refused,  // lowering (or verify with the launch) refused with PtxUnsupported / OverLimit
};
struct PtxCheck {
  PtxVerdict verdict = PtxVerdict::Match;
  Diag refusal;  // when Refused: lowering's typed error
};
// A Diag (naming the case header) when the property fails: the PTX does not parse, the
// evaluator refuses, faults, hits its limit or meets unspecified behaviour (all generator bugs),
// lowering fails with any other kind (Internal ...), the interpreter does not finish, or a word of
// final memory differs.
Expected<PtxCheck> checkPtxCase(const PtxCase& c);

}  // namespace qgpu::gen
