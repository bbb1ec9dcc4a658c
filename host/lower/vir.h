// qgpu/host/lower/vir.h — the lowering's internal IR and its passes (internal to host/lower/).
//
// VIR is the machine's own operation set (oracle/isa.def) on unlimited virtual registers:
// general vregs (32-bit values) and predicate vregs, in blocks of unlimited length whose
// terminators name blocks by index. The pipeline (docs/lowering.md):
//
//   flatten      ptx::Module -> FlatFunction  entry picked, calls inlined, params resolved
//   translate    FlatFunction -> VFunc        basic blocks, 64/16-bit narrowing, one PTX op ->
//                                             one or more machine ops on vregs
//   cleanup      VFunc -> VFunc               constant propagation, strength reduction of
//                                             multiplies by 0/1/2^k, address folding, dead code
//   simplify     VFunc -> VFunc               jump threading, ret -> Exit, block merging
//   layout       VFunc -> VFunc               loop-contiguous reverse post-order, entry first;
//                                             refuses irreducible control flow
//   finalize     VFunc -> machine::Program    predicates across blocks -> general registers,
//                                             blocks split to <= 16 ops, register allocation
//                                             with spilling, predicate allocation per block
//
// Each pass keeps these invariants: block 0 is the entry, every terminator target is a valid
// block index, every vreg/pvreg index is < numRegs/numPreds.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/diag.h"
#include "host/lower/lower.h"
#include "host/ptx/ir.h"
#include "oracle/machine.h"

namespace qgpu::lower {

inline constexpr int kNone = -1;

enum class VKind : uint8_t {
  None,     // slot unused
  Reg,      // a general vreg
  Imm,      // a 32-bit immediate
  Special,  // a special register
};

struct VOperand {
  VKind kind = VKind::None;
  int reg = kNone;
  uint32_t imm = 0;
  machine::Special special = machine::Special::TidX;

  static VOperand r(int v) { return {VKind::Reg, v, 0, machine::Special::TidX}; }
  static VOperand i(uint32_t value) { return {VKind::Imm, kNone, value, machine::Special::TidX}; }
  static VOperand s(machine::Special sp) { return {VKind::Special, kNone, 0, sp}; }
  bool isReg() const { return kind == VKind::Reg; }
  bool isImm() const { return kind == VKind::Imm; }
  bool operator==(const VOperand&) const = default;
};

struct VInstr {
  machine::Op op = machine::Op::Mov;
  int dst = kNone;                  // general vreg written (kNone: none)
  int dstPred = kNone;              // predicate vreg written
  std::array<VOperand, 3> src{};    // general sources
  std::array<int, 2> psrc{kNone, kNone};  // predicate sources
  machine::Space space = machine::Space::Global;
  int32_t offset = 0;               // Mem: byte offset; Local: slot
  int guard = kNone;                // predicate vreg guarding the op
  bool guardNeg = false;
  SourceLoc loc;                    // the PTX instruction it comes from
  bool freshDef = false;            // finalize: guarded def of a vreg that no def reaches, so the
                                    // kept old value is undefined and the def kills (liveness)
};

struct VTerm {
  machine::TermKind kind = machine::TermKind::Exit;
  int pred = kNone;  // Branch: predicate vreg
  bool negate = false;
  int taken = kNone;  // Branch: target when pred (xor negate) holds
  int next = kNone;   // Jump/Branch/Barrier: the (other) successor
};

struct VBlock {
  std::vector<VInstr> ops;
  VTerm term;
  int origin = kNone;  // finalize: the block (before splitting) this piece comes from
};

struct VFunc {
  std::string name;
  std::vector<VBlock> blocks;  // block 0 is the entry
  int numRegs = 0;             // general vregs 0..numRegs-1
  int numPreds = 0;            // predicate vregs 0..numPreds-1
  uint32_t sharedWords = 0;    // user shared memory plus hidden words (bar.red counter)
  uint32_t localWords = 0;     // per-thread local-memory words: spill slots 0..localWords-1
                               // (docs/lowering.md, "Local memory"); spills take the next slots
  std::vector<bool> noSpill;   // per vreg: a spill temporary (never spilled again)

  int newReg() { noSpill.push_back(false); return numRegs++; }
  int newPred() { return numPreds++; }
};

// ---- Pass 1: flatten (flatten.cpp) ----
// The entry with every reached .func inlined: one register space, one label space, call
// sequences turned into moves and jumps, callee `ret` into a jump to the call's continuation.
// A .local variable of the flat function — the entry's, or an inlined callee copy's (renamed
// `f#copy#name` like its labels) — at its byte offset in the thread's frame (docs/lowering.md
// "Local memory": a callee's frame starts where its caller's ends).
struct FrameVariable {
  ptx::Variable decl;
  uint64_t offset = 0;
};

struct FlatFunction {
  std::string name;
  std::vector<ptx::RegInfo> regs;
  std::vector<ptx::Instruction> body;
  std::map<std::string, uint32_t> labels;  // label -> index in body of the next instruction
  std::vector<ptx::Variable> shared;       // .shared declarations of the entry and its callees,
                                           // then the module-scope ones the body names
  std::vector<FrameVariable> locals;       // the thread's frame: the entry's .local variables,
                                           // then each inlined callee copy's
  uint32_t dynamicSharedWords = 0;         // LowerOptions::dynamicSharedWords
  std::map<std::string, uint64_t> params;  // entry param name -> value
  std::map<std::string, int> paramBits;    // entry param name -> declared width
  std::string file;
};
Expected<FlatFunction> flatten(const ptx::Module& module, const LowerOptions& options);

// ---- Pass 2: translate (translate.cpp; its pieces are declared in translate.h) ----
struct TranslateInfo {
  int basicBlocks = 0;
};
Expected<VFunc> translate(const FlatFunction& flat, TranslateInfo* info = nullptr);

// Where the kernel assumes 32-lane warps (warp_lanes.cpp): one line per finding, naming the PTX
// line, the instruction and what it assumes. Empty for a kernel written for 4-lane warps.
std::vector<std::string> warp32Assumptions(const FlatFunction& flat);

// ---- Pass 3/4/5: cleanup, simplify, layout (cfg.cpp) ----
void cleanup(VFunc& f);                 // constant propagation, strength reduction, address
                                        // folding, DCE
// A multiply (mul, mulhi.u/s, mad) by an immediate factor 0, 1 or 2^k rewritten in place to the
// one op without a multiply that computes the same value (a mov, shl, shr.u/s or add; the rules
// are in cfg.cpp's header); only op and sources change. False, and `i` untouched, if none applies.
bool reduceStrength(VInstr& i);
void simplifyCfg(VFunc& f);             // threading, ret -> Exit, merging, unreachable removal
// Folds one small branch arm (a triangle or diamond of blocks reached only from the branch) into
// the branching block as guarded ops; false if there is none. Used only when a program would
// otherwise need more than 32 blocks (docs/lowering.md §6).
bool ifConvert(VFunc& f);
Status layout(VFunc& f);                // reorders blocks; PtxUnsupported if irreducible
std::vector<std::vector<int>> successors(const VFunc& f);

// ---- Pass 6: finalize (regalloc.cpp) ----
struct Finalized {
  machine::Program program;
  int maxLive = 0;     // most general vregs live at one point (before spilling)
  int spillSlots = 0;  // per-thread spill slots used
  std::vector<std::vector<SourceLoc>> opLocs;  // opLocs[b][i]: the PTX instruction of op i of block b
};
struct FinalizeResult {
  Expected<Finalized> result;  // the program, or why there is none
  bool tooManyBlocks = false;  // the failure is OverLimit on the block count alone (not ops,
                               // registers or memory), so if-conversion may make it fit
};
FinalizeResult finalize(const VFunc& f);

// Operand helpers shared by the passes.
bool hasSideEffects(machine::Op op);  // must be kept even when its result is unused
int numSrc(machine::Op op);           // general source slots in use
int numPsrc(machine::Op op);          // predicate source slots in use
std::string describe(const VFunc& f); // debug listing

}  // namespace qgpu::lower
