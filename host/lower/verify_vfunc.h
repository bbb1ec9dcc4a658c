// qgpu/host/lower/verify_vfunc.h — the invariants of VIR (host/lower/vir.h), checked between
// passes so that a pass that breaks them is named instead of surfacing later as an unexplained
// Internal error (issue 9, item 3).
//
// `verify(f, pass)` checks, for a VFunc produced by `pass` ("translate", "cleanup", ...):
//   - there is at least one block (block 0 is the entry);
//   - every terminator target (Jump/Barrier `next`, Branch `taken` and `next`) is a block index,
//     and a Branch's predicate is a pvreg index;
//   - every op writes a vreg only if its machine op writes a register (`dst`), a pvreg only if it
//     writes a predicate (`dstPred`), and the index is < numRegs / numPreds;
//   - the general sources in use (machine::numGeneralSources) are present (not VKind::None), and
//     register sources are < numRegs; the predicate sources in use are pvreg indices; a guard is
//     kNone or a pvreg index;
//   - `noSpill` has one entry per vreg.
// The Diag is Internal and names the pass, the block, the op index, its mnemonic, the operand
// and the PTX line the op came from: "after cleanup: block 3 op 2 (add): source 1 is vreg 40,
// numRegs is 39".
//
// lower() runs it after every pass when LowerOptions::verifyPasses is set or the environment
// variable QGPU_VERIFY_VIR is set to a non-empty value other than "0" (tests and fuzzing set it).
#pragma once

#include "common/diag.h"
#include "host/lower/vir.h"

namespace qgpu::lower {

Status verify(const VFunc& f, const char* pass);

// Whether lower() checks between passes: the option, or QGPU_VERIFY_VIR.
bool verifyPassesEnabled(const LowerOptions& options);

}  // namespace qgpu::lower
