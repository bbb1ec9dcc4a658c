// qgpu/host/lower/expand_division.h — division and remainder expanded into a shift-subtract loop
// of existing ops, for targets without a native divider (the circuit: docs/circuit.md §8
// "Division"; docs/lowering.md "Expanding division").
//
// Contract: `expandDivision` takes a machine program that passes machine::verify() and returns
// one without `div.u`, `div.s`, `rem.u` or `rem.s` that passes machine::verify() and computes,
// in every lane, exactly what oracle/semantics.h `evalAlu` gives for the replaced op (b = 0,
// INT_MIN / -1 and INT_MIN % -1 included), leaving every other register, predicate and memory
// word as the original does: a guarded division stays guarded (its guard-false lanes keep the
// destination), lanes outside the active mask are untouched. Each division's block is split at
// the op into the head (the ops before it + setup), a loop block (2 quotient bits per step, 16
// steps) and the continuation (signed fix-ups, the result, the ops after it, the terminator),
// so a division costs 2 ROM blocks and 16 + 2 steps instead of one op. A div and a rem of the
// same operands under the same guard in one block share one loop (both results come out of it).
//
// Registers: the pass allocates its temporaries (remainder, shifted dividend/quotient, counter,
// |b| for signed divisions, one per predicate live across the split) from the registers that are
// dead after the division (per-lane liveness on the program's CFG) and not its operands; it never
// spills. Errors (each names the op, its block and index, and its PTX line when `opLocs` has it):
//   OverLimit       — not enough dead registers or predicates at the op, the head or the
//                     continuation would exceed kMaxOpsPerBlock ops, or the program would exceed
//                     kMaxBlocks blocks;
//   ProgramInvalid  — the input does not verify (its own Diag);
//   Internal        — the expanded program does not verify (a bug of this pass).
// What differs from the original run, by design: the trace, the step count (a division is 18
// steps) and so a run near the step limit; and one undefined-behaviour case: a *divergent*
// barrier terminating a block that divides faults after the ops before the division have run
// (the original faults before its block runs).
// Plain C++: reads only oracle/ (the op table and the machine IR).
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "host/lower/expansion.h"
#include "oracle/machine.h"

namespace qgpu::lower {

// div.u, div.s, rem.u, rem.s: the ops this pass replaces.
bool isDivision(machine::Op op);

using ExpandDivisionOptions = ExpandOptions;

struct ExpandDivisionStats : ExpansionCounts {
  int expanded = 0;      // divisions replaced by a loop
  int fused = 0;         // of them, pairs q = a / b, r = a % b that share one loop
  int removed = 0;       // divisions into r0 (no effect: a division cannot fault) deleted
};

Expected<machine::Program> expandDivision(const machine::Program& program,
                                          const ExpandDivisionOptions& options = {},
                                          ExpandDivisionStats* stats = nullptr);

}  // namespace qgpu::lower
