// qgpu/oracle/machine.h — the qgpu SIMT machine: its limits and its program representation.
//
// This header is the machine's architectural contract (docs/machine.md explains it in prose).
// A `Program` is what the ROM holds: at most kMaxBlocks program blocks, each a straight-line list
// of at most kMaxOpsPerBlock operations and one terminator. A `Launch` is what the host hands the
// machine besides the program: the launch shape and the initial global memory image.
// Plain C++: no CUDA, no LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::machine {

// ---- Limits (the machine's size; docs/machine.md §1) ----
inline constexpr int kLanes = 4;               // lanes per warp
inline constexpr int kRegs = 16;               // r0 (always reads 0, writes discarded) + r1..r15
inline constexpr int kPreds = 8;               // p0..p7, block-local (undefined at block entry)
inline constexpr int kMaxBlocks = 32;          // program ROM: program blocks
inline constexpr int kMaxOpsPerBlock = 16;     // operations per program block (terminator apart)
inline constexpr int kGlobalWords = 126;       // 32-bit words of global memory
inline constexpr int kSharedWords = 126;       // 32-bit words of shared memory per CTA (incl. spills)
inline constexpr int kMaxThreadsPerBlock = 16; // 4 warps, the last one possibly partial
inline constexpr int kMaxWarps = kMaxThreadsPerBlock / kLanes;
inline constexpr int kMaxGridBlocks = 16;      // CTAs per launch, run one after another

// ---- Operations: one table, oracle/isa.def ----
enum class OpClass : uint8_t { Alu, Cmp, Sel, Pred, Mem, Local, Warp };
// What an op writes: nothing, its `dst` register, or its `dstPred` predicate.
enum class DstKind : uint8_t { None, Reg, Pred };
// What an op does to memory (global/shared for Mem ops, the spill slots for Local ops).
enum class MemEffect : uint8_t { None, Read, Write, ReadWrite };
// Whether a lane's result depends on other lanes' operands (shuffles and votes).
enum class LaneScope : uint8_t { Own, Cross };
// Which record carries a register result: the op's one record, or a second one at a continuation
// row (atomics, multiplies: recordsOf).
enum class ResultTiming : uint8_t { Now, Late };

enum class Op : uint8_t {
#define QGPU_OP(name, mnemonic, nsrc, npsrc, cls, dst, mem, lanes, result) name,
#include "oracle/isa.def"
#undef QGPU_OP
};

// One row of oracle/isa.def.
struct OpInfo {
  const char* mnemonic;
  uint8_t numSources;      // general sources in src[] (PConst: 1, its immediate value)
  uint8_t numPredSources;  // predicate sources in psrc[]
  OpClass cls;
  DstKind dst;
  MemEffect mem;
  LaneScope lanes;
  ResultTiming result;
};

const OpInfo& opInfo(Op op);
inline constexpr int kNumOps = 0
#define QGPU_OP(name, mnemonic, nsrc, npsrc, cls, dst, mem, lanes, result) +1
#include "oracle/isa.def"
#undef QGPU_OP
    ;

// Operand shape of an operation, read from its table row; verify(), the prompt encoding and the
// lowering use these, so an op's shape is defined once.
inline int numGeneralSources(Op op) { return opInfo(op).numSources; }   // src[] slots in use
inline int numPredSources(Op op) { return opInfo(op).numPredSources; }  // psrc[] slots in use
inline bool writesReg(Op op) { return opInfo(op).dst == DstKind::Reg; }  // writes `dst` (r0 discards)
inline bool writesPred(Op op) { return opInfo(op).dst == DstKind::Pred; }  // writes `dstPred`
inline bool writesMemory(Op op) {  // stores, atomics, spill stores
  MemEffect m = opInfo(op).mem;
  return m == MemEffect::Write || m == MemEffect::ReadWrite;
}

// Special registers readable as operands.
enum class Special : uint8_t {
  TidX,     // thread index in the CTA (0 .. ntid-1)
  NtidX,    // threads per CTA
  CtaidX,   // CTA index in the grid
  NctaidX,  // CTAs in the grid
  LaneId,   // tid % 4
  WarpId,   // tid / 4
};
inline constexpr int kNumSpecials = 6;
const char* specialName(Special sp);  // "%tid.x", "%ntid.x", ... (the PTX names)

enum class OperandKind : uint8_t {
  None,     // slot unused
  Reg,      // r0..r15
  Imm,      // 32-bit immediate
  Special,  // a special register
};

struct Operand {
  OperandKind kind = OperandKind::None;
  uint8_t reg = 0;
  Special special = Special::TidX;
  uint32_t imm = 0;

  static Operand r(uint8_t index) { return {OperandKind::Reg, index, Special::TidX, 0}; }
  static Operand i(uint32_t value) { return {OperandKind::Imm, 0, Special::TidX, value}; }
  static Operand s(Special sp) { return {OperandKind::Special, 0, sp, 0}; }
  bool operator==(const Operand&) const = default;
};

enum class Space : uint8_t { Global, Shared };

inline constexpr uint8_t kNoPred = 0xff;

// A guard: the operation acts only in lanes where pred (xor negate) holds.
struct Guard {
  uint8_t pred = kNoPred;  // kNoPred: unguarded
  bool negate = false;
  bool operator==(const Guard&) const = default;
};

struct Instr {
  Op op = Op::Mov;
  uint8_t dst = 0;                    // destination register (0 discards)
  uint8_t dstPred = kNoPred;          // destination predicate (Cmp, Pred, VoteAny/All)
  std::array<Operand, 3> src{};       // general sources, opInfo(op).numSources of them
  std::array<uint8_t, 2> psrc{kNoPred, kNoPred};  // predicate sources (Sel, Pred, Warp votes)
  Space space = Space::Global;        // Mem ops
  int32_t offset = 0;                 // Mem: byte offset added to src0; Local: slot index
  Guard guard;
  bool operator==(const Instr&) const = default;
};

// A branch target that is no block: the lanes that take it exit (as with an Exit terminator).
// It saves the program an exit-only block and the trace an EXEC of it.
inline constexpr uint8_t kExitTarget = 0xff;

enum class TermKind : uint8_t {
  Jump,     // all lanes continue at `next`
  Branch,   // lanes where pred (xor negate) holds go to `taken`, the others to `next`; either
            // target may be kExitTarget
  Barrier,  // __syncthreads: the warp waits for every live warp of the CTA, then goes to `next`
  Exit,     // the lanes finish
};

struct Terminator {
  TermKind kind = TermKind::Exit;
  uint8_t pred = kNoPred;
  bool negate = false;
  uint8_t taken = 0;
  uint8_t next = 0;
  bool operator==(const Terminator&) const = default;
};

struct Block {
  std::vector<Instr> ops;
  Terminator term;
  bool operator==(const Block&) const = default;
};

// The trace records an op writes (docs/trace.md "What one op writes"): 2 for a Late op with a
// register destination (an atomic with dst != r0: its memrec, or NOP when no lane executes, then
// its regrec; a multiply: NOP, then its regrec), else 1. The prompt keys an op's ROM row by its
// first record's index in the block (docs/trace.md "Prompt"), so a block holds at most
// kMaxOpsPerBlock records (verify()). The lowering counts its virtual ops the same way.
inline int recordsOf(Op op, bool hasDst) {
  return opInfo(op).result == ResultTiming::Late && writesReg(op) && hasDst ? 2 : 1;
}
inline int recordsOf(const Instr& in) {
  return recordsOf(in.op, in.dst != 0);
}
// The records of a run of ops, a block's: the record index past its last op.
inline int blockRecords(const std::vector<Instr>& ops) {
  int n = 0;
  for (const Instr& in : ops) n += recordsOf(in);
  return n;
}
inline int blockRecords(const Block& block) {
  return blockRecords(block.ops);
}

struct Program {
  std::string name;                 // kernel name, for messages
  std::vector<Block> blocks;        // block 0 is the entry
  uint8_t sharedWords = 0;          // words of user shared memory, from word 0
  uint8_t spillSlots = 0;           // per-thread spill slots, placed after user shared memory
  bool operator==(const Program&) const = default;
};

struct Launch {
  uint32_t gridX = 1;   // CTAs
  uint32_t blockX = 1;  // threads per CTA
  std::array<uint32_t, kGlobalWords> global{};  // initial global memory
};

// Checks every invariant of a program against the machine's limits and against the launch
// (shared memory plus spill slots for blockX threads must fit). The message names the block,
// the operation index, its mnemonic and the offending operand.
Status verify(const Program& program);
Status verify(const Program& program, const Launch& launch);

// Human-readable listing, one operation per line, stable (used in golden tests and `qgpu compile`).
std::string print(const Program& program);
std::string print(const Instr& instr);

}  // namespace qgpu::machine
