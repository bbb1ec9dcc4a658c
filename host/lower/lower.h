// qgpu/host/lower/lower.h — lowering a parsed PTX module to a machine program.
//
// Contract: `lower` takes a Module that passed ptx::verify() and the launch-independent inputs of
// one kernel (entry name and parameter values) and returns a machine::Program that passed
// machine::verify(), or a Diag:
//   PtxUnsupported — a construct outside the supported subset (names it and its source line);
//   OverLimit      — the program does not fit the machine (names the limit and by how much);
//                    more ops after cleanup than the ROM holds is refused before the costly passes
//                    (docs/lowering.md §4), so any input within the front end's cap is answered fast;
//   PtxInvalid     — inconsistent input (no such entry, wrong number of parameters, ...);
//   Internal       — a lowering bug: machine::verify() rejected the result, or register allocation
//                    or spill-code fitting did not converge.
// The passes, their contracts and what is refused are described in docs/lowering.md.
// Plain C++: no CUDA, no LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/diag.h"
#include "host/ptx/ir.h"
#include "oracle/machine.h"

namespace qgpu::lower {

struct LowerOptions {
  std::string entry;             // kernel name; empty = the module's only .entry
  std::vector<uint32_t> params;  // one value per entry .param, in order: a pointer is the BYTE
                                 // address of its array in machine global memory; a scalar is
                                 // its value
  uint32_t dynamicSharedWords = 0;  // words of dynamic shared memory the launch gives (the
                                    // kernel file's `shared=W`): the `.extern .shared` arrays
  bool verifyPasses = false;     // check VIR's invariants after every pass, naming the pass that
                                 // broke them (host/lower/verify_vfunc.h; also QGPU_VERIFY_VIR=1)
};

struct LowerStats {
  int ptxInstructions = 0;  // instructions of the entry after inlining (labels excluded)
  int basicBlocks = 0;      // PTX basic blocks after inlining
  int machineBlocks = 0;    // blocks of the final program
  int machineOps = 0;       // operations of the final program (terminators excluded)
  int maxLive = 0;          // most general virtual registers live at one point (before spilling)
  int spillSlots = 0;       // per-thread spill slots used
  int localWords = 0;       // per-thread words of the kernel's .local frame (before the spill slots)
  // Where the kernel assumes 32-lane warps (a shuffle width over 4, a member mask naming lanes
  // above 3): it runs as 4-lane code here, so a comparison with a real GPU is inconclusive with
  // these reasons, not a mismatch. One line per finding; empty for 4-lane code.
  std::vector<std::string> assumes32Lanes;
  // Where each op of the program comes from: opLocs[b][i] is the PTX instruction of
  // program.blocks[b].ops[i] (file and line; expand_division.h names it in its errors).
  std::vector<std::vector<SourceLoc>> opLocs;
};

Expected<machine::Program> lower(const ptx::Module& module, const LowerOptions& options,
                                 LowerStats* stats = nullptr);

}  // namespace qgpu::lower
