// qgpu/host/lower/expand_multiply.h — register multiplies (`mul`, `mad`, `mulhi.u`, `mulhi.s`)
// expanded into code of existing ops, for targets without a native multiplier, or (`highOnly`) with
// one for the low half only: the circuit's pipeline computes mul and mad but not mulhi
// (docs/circuit.md "Built: MUL in the pipeline"; docs/lowering.md "Expanding multiplication").
//
// Contract: `expandMultiply` takes a machine program that passes machine::verify() and returns one
// without those four ops (`highOnly`: without mulhi.u and mulhi.s) that passes machine::verify()
// and computes, in every lane, exactly what oracle/semantics.h `evalAlu` gives for the replaced
// op, leaving every other register, predicate and memory word as the original does: a guarded
// multiply stays guarded, lanes outside the active mask are untouched. Three forms:
//   * chain — `mul`/`mad` by an immediate whose shift-add chain (its non-adjacent form: each
//     nonzero digit ±2^j one `shl` and one `add`/`sub`) fits the op's block: the op is replaced in
//     place, no new block, no new step (255·x = (x << 8) − x: 2 ops);
//   * loop — every other multiply: the block is split at the op (host/lower/expand_loop.h) into
//     head, loop and continuation. The multiplier is the smaller operand (min.u, so the trip count
//     follows the smaller value; the low 32 bits of a product do not depend on signedness), bit
//     reversed so that `set.lt.s` reads its next bit, the multiplicand the larger one, and the loop
//     adds the shifted multiplicand for each set bit until no bit is left. `mul`/`mad`: 3 bits per
//     step (13 ops), ceil(bits / 3) steps, ≤ 11. `mulhi`: a 64-bit accumulator with an explicit
//     carry, 1 bit per step (10 ops), ≤ 32 steps; `mulhi.s` then subtracts b where a < 0 and a
//     where b < 0 (the high word of the signed product, modulo 2^32). Lanes whose multiplier has
//     fewer bits leave the loop early and wait at the continuation (min-PC).
//   * halves — `mulhi` with `highOnly` (the target multiplies the low half itself): straight code
//     of four 16-bit half products through `mul`/`mad`, a carry by `min.u` and a funnel shift
//     (16 ops, mulhi.s 22; three registers, two when the destination can hold the sum, live ones
//     borrowed through spill slots past the program's own where too few are dead), over a
//     split block: head, a block more where the records need it, continuation; a step more per
//     new block (one or two), whatever the operands. It
//     needs fewer registers and setup ops than the loop, so with `highOnly` it is the only form.
// Multiplies into r0 (no effect: a multiply cannot fault) are deleted.
//
// Errors (each names the op, its block and index, and its PTX line when `opLocs` has it):
//   OverLimit       — not enough dead registers or predicates at the op, the head or the
//                     continuation would exceed kMaxOpsPerBlock ops, or the program would exceed
//                     kMaxBlocks blocks;
//   ProgramInvalid  — the input does not verify (its own Diag);
//   Internal        — the expanded program does not verify (a bug of this pass).
// What differs from the original run, by design: the trace, the step count (a loop is 2 blocks and
// up to 11 or 32 steps more), and so a run near the step limit; as with expand_division.h, a
// divergent barrier terminating a block that multiplies in a loop faults after the ops before the
// multiply have run.
// Plain C++: reads only oracle/ (the op table and the machine IR).
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "host/lower/expansion.h"
#include "oracle/machine.h"

namespace qgpu::lower {

// mul, mad, mulhi.u, mulhi.s: the ops this pass replaces.
bool isMultiply(machine::Op op);
// mulhi.u, mulhi.s: the ops it replaces with `highOnly`.
bool isMultiplyHigh(machine::Op op);

struct ExpandMultiplyOptions : ExpandOptions {
  // Replace only mulhi.u and mulhi.s, leaving mul and mad (and multiplies into r0) as they are:
  // the circuit's pipeline multiplies the low half itself (docs/circuit.md "MUL in the pipeline").
  bool highOnly = false;
};

struct ExpandMultiplyStats : ExpansionCounts {
  int chains = 0;        // multiplies by an immediate replaced in place by a shift-add chain
  int loops = 0;         // multiplies replaced by a loop
  int halves = 0;        // mulhi replaced by straight code of 16-bit half products (highOnly)
  int removed = 0;       // multiplies into r0 deleted
};

Expected<machine::Program> expandMultiply(const machine::Program& program,
                                          const ExpandMultiplyOptions& options = {},
                                          ExpandMultiplyStats* stats = nullptr);

}  // namespace qgpu::lower
