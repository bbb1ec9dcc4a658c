// qgpu/gen/program_gen.h — random machine programs (oracle IR) that pass machine::verify.
//
// The third generator of issue 9: YARPGen style, every probability and limit is one field of
// `Policy`, and a case is a pure function of (generator version, policy, seed), so
// `describe(policy, seed)` is all it takes to replay one (`parsePolicy` reads the policy back).
//
// Contract of generateProgram():
//   - Every case passes machine::verify(program, launch). A case that does not is a generator
//     bug: the generator prints the case's header, the Diag and the listing, and aborts.
//   - Ops are drawn from oracle/isa.def by class (OpClass): a new op in an existing class is
//     generated without touching the generator. Only a new *class* needs code here (the
//     generator then aborts with a message naming it; gen_program_test covers every class).
//   - Programs terminate by construction: the control flow is a sequence of regions laid out in
//     increasing block order (every edge goes forward) except loop back edges, and a loop's trip
//     count is a counter register set to 1..maxTrips in its preheader and decremented
//     to zero in its latch; no other op writes that register. `Case::stepBound` is the number of
//     steps (EXEC events) the run can take at most; running with maxSteps = stepBound never
//     reaches StepLimit (gen_program_test pins that).
//   - Divergence comes from branches and loop counters on lane-dependent values (%tid.x,
//     %laneid, data registers); barriers are placed only where every live lane of a warp is at
//     the same block (top level, or inside regions whose predicates are uniform), except with
//     probability `divergentBarrierProb`, which may FAULT (divergent barrier). Memory addresses
//     are in range and aligned by construction (a sub-word store at a random byte or halfword
//     of its word), except with probability `outOfRangeProb`
//     (FAULT). No other fault is possible.
//   - Deterministic on every platform: the generator uses its own PRNG (SplitMix64) and no
//     standard-library distribution (those are implementation-defined).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::gen {

// Bump when the same (policy, seed) can give a different case.
inline constexpr int kGeneratorVersion = 4;  // 2: no commit masks; 3: sub-word stores;
                                             // 4: a multiply fills two records (trace v6)

// The policy's fields: X(type, name, default, "one-line meaning"). describe() prints them all and
// parsePolicy() reads them back, so a new field is printed and replayable with no other change.
#define QGPU_GEN_POLICY_FIELDS(X)                                                                  \
  /* ---- Program shape ---- */                                                                    \
  X(int, maxRegions, 6,                                                                            \
    "top-level control-flow regions between the entry and the exit block (1..)")                   \
  X(int, maxBlocks, 32, "blocks per program, at most (2..kMaxBlocks; the exit block included)")    \
  X(int, maxDepth, 2, "nesting depth of regions inside if arms and loop bodies (0: flat)")         \
  X(int, maxArmRegions, 2, "regions in one if arm or loop body (1..)")                             \
  X(int, minOps, 1, "random ops per block, at least (structural ops come on top)")                 \
  X(int, maxOps, 8, "random ops per block, at most (a block never exceeds kMaxOpsPerBlock)")       \
  /* ---- Region kinds (relative weights) ---- */                                                  \
  X(uint32_t, wStraight, 3, "weight of a straight block (jmp to the next region)")                 \
  X(uint32_t, wIf, 2, "weight of if-then (br to an arm or past it)")                               \
  X(uint32_t, wIfElse, 3, "weight of if-then-else (two arms, reconverging at the join)")           \
  X(uint32_t, wLoop, 2, "weight of a counted loop (preheader, body, latch with back edge)")        \
  X(uint32_t, wBarrier, 1, "weight of a block ending in bar (only where control flow is uniform)") \
  X(uint32_t, wEarlyExit, 1, "weight of a block whose br retires some lanes (br p ? exit : next)") \
  X(double, divergentProb, 0.75, "a branch or loop count is lane-dependent rather than uniform")   \
  X(uint32_t, maxTrips, 4, "loop trip counts are 1..maxTrips")                                     \
  X(double, divergentBarrierProb, 0.03,                                                            \
    "a barrier may be placed in divergent flow (FAULTs if lanes split)")                           \
  /* ---- Op classes (relative weights; one op of the class is then drawn uniformly) ---- */       \
  X(uint32_t, wAlu, 10, "weight of class Alu")                                                     \
  X(uint32_t, wCmp, 3, "weight of class Cmp")                                                      \
  X(uint32_t, wSel, 1, "weight of class Sel (needs a predicate written earlier in the block)")     \
  X(uint32_t, wPred, 2, "weight of class Pred (pand, pconst, ...)")                                \
  X(uint32_t, wMem, 4, "weight of class Mem (ld, st, atomics)")                                    \
  X(uint32_t, wLocal, 1, "weight of class Local (spill slots; only when the program has some)")    \
  X(uint32_t, wWarp, 2, "weight of class Warp (shuffles, votes)")                                  \
  /* ---- Operands ---- */                                                                         \
  X(double, guardProb, 0.15, "an op is guarded by a predicate written earlier in its block")       \
  X(double, negateProb, 0.4, "a guard or branch negates its predicate")                            \
  X(double, immProb, 0.3, "a source operand is an immediate")                                      \
  X(double, specialProb, 0.15, "a source operand is a special register (else a register)")         \
  X(double, smallImmProb, 0.7, "an immediate is in -16..16 rather than any 32-bit value")          \
  X(double, r0DstProb, 0.03, "an op's destination register is r0 (result discarded)")              \
  X(double, width4ShflProb, 0.8,                                                                   \
    "a shuffle's c operand is a 4-lane width (0x1c1f / 0x1c00), else random")                      \
  /* ---- Memory ---- */                                                                           \
  X(double, sharedProb, 0.4, "a memory op uses shared memory (when the program has some)")         \
  X(uint32_t, wConstAddr, 2, "weight of a constant address")                                       \
  X(uint32_t, wLaneAddr, 3, "weight of an address indexed by %tid.x or %laneid")                   \
  X(uint32_t, wDataAddr, 3, "weight of an address indexed by a data register")                     \
  X(double, outOfRangeProb, 0.01, "a memory op's address is out of range or misaligned (FAULT)")   \
  X(int, maxSharedWords, 32, "user shared memory is 0..maxSharedWords words")                      \
  X(int, maxSpillSlots, 2, "spill slots 0..maxSpillSlots, fewer when shared memory would not fit") \
  X(double, initNonzeroProb, 0.5, "each initial global word is nonzero")                           \
  /* ---- Launch ---- */                                                                           \
  X(uint32_t, minGrid, 1, "CTAs per launch, at least")                                             \
  X(uint32_t, maxGrid, 3, "CTAs per launch, at most (<= kMaxGridBlocks)")                          \
  X(uint32_t, minBlockX, 1, "threads per CTA, at least")                                           \
  X(uint32_t, maxBlockX, 16, "threads per CTA, at most (<= kMaxThreadsPerBlock)")

struct Policy {
#define QGPU_GEN_POLICY_MEMBER(type, name, def, doc) type name = def;
  QGPU_GEN_POLICY_FIELDS(QGPU_GEN_POLICY_MEMBER)
#undef QGPU_GEN_POLICY_MEMBER
  bool operator==(const Policy&) const = default;
};

// Usage when a field is out of its range (a probability outside [0, 1], min > max, a launch the
// machine cannot run, all region or op-class weights zero).
Status validate(const Policy& policy);

struct Case {
  machine::Program program;
  machine::Launch launch;
  // The most steps the run can take (sum over blocks of the product of the enclosing loops' trip
  // bounds, times warps per CTA, times CTAs). Run with RunOptions::maxSteps = stepBound.
  uint64_t stepBound = 0;
  std::string header;  // describe(policy, seed)
};

// The case for (policy, seed); Usage if the policy does not validate.
Expected<Case> generateProgram(const Policy& policy, uint64_t seed);

// One line that replays the case: "qgpu-gen program v4 seed=S policy: maxRegions=6 ...".
std::string describe(const Policy& policy, uint64_t seed);
// Reads "name=value" pairs separated by spaces (the part of describe() after "policy:", or any
// subset of the fields; the rest keep their defaults). Usage for an unknown name or a bad value.
Expected<Policy> parsePolicy(std::string_view text);

}  // namespace qgpu::gen
