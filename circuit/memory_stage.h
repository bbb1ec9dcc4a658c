// qgpu/circuit/memory_stage.h — the memory stage (docs/circuit.md §4.1 L5, §9 "Built: the memory
// stage"): at a memory op's executing position, per lane the byte address, the fault bit where
// the interpreter faults, the data memories' read at that address (circuit/datamem.h), the loaded
// word as a result the result stage can select, and a store's memrec in the record emitter's
// encoding (circuit/record_emit.h RecordOutcomeFields).
//
// Inputs (clean ±u sign fields, +u = 1, at the executing position; the stage computes at every
// position, only the consumer's enable makes a position count):
//   head        the op's head word OP(a) (32 bits, trace::packedLayout(PackedWord::OpHead)):
//               opcode (bits 4..10) and space (bit 24: 0 global, 1 shared)
//   offset      the op's offset word OP(off) (32 bits: the ROM's offset slot; a byte offset)
//   sharedWords the program word's sharedWords field (7 bits, PROG bits 16..22: the launch latch)
//   exec        the executing lanes e = m ∧ guard-true (4 bits)
//   per lane    src0_l (32: the address register), src1_l (32: the store value)
// Output semantics, exactly oracle/interpreter.cpp `execMem` (docs/machine.md §4 "Memory"):
//   addr_l  = src0_l + offset (mod 2^32)
//   bytes   = oracle::accessBytes(op) (isa.def + semantics.h: 4 ld / st / atomics, 2 st.b16, 1 st.b8)
//   words   = 126 (global) or sharedWords (shared: the user part only)
//   bad_l   = addr_l mod bytes ≠ 0 ∨ addr_l / 4 ≥ words      (a lane's address faults)
//   fault_l = isMem ∧ e_l ∧ bad_l;  fault = ⋁_l fault_l       (op-level: no lane acts, FAULT)
//   load_l  = M_space[addr_l / 4]                             (ld's value; an atomic's old word)
//   memrec (stores and atomics): tag MG(e) / MS(e), NOP for e = 0; mask e; word_l = addr_l / 4;
//           value_l = src1_l (st), evalSubwordStore(op, M[word_l], addr_l, src1_l) (st.b8, st.b16).
//
// Layers (L = firstLayer; the data memories' five layers L..L+4 are built inside, datamem.h,
// their read address the stage's; the stage's units follow the data memories' in each MLP):
//   L    MLP  the adder's level 1 per lane (logic.h buildAdder: src0_l + offset, 10 bus dims per
//             nibble); the op kind decoded from the opcode against isa.def's Mem column and
//             accessBytes (one 7-literal AND per op row: the table stays the one definition):
//               isMem, acc4 (bytes = 4), acc2 (bytes = 2), isLoad (Read), isStore (Write),
//               isB8, isB16 (the sub-word stores), isAtom (ReadWrite), writes (Write ∨ ReadWrite)
//   L+1  MLP  the adder's level 2: addr_l (32 bits)
//   L+2  MLP  per lane (a_i = addr_l's bit i, w = a_2..a_8 the word index below 128):
//               hi_l   = [Σ_{i=9..31} a_i ≥ 1]                       (one step pair)
//               mis_l  = [acc4 ∧ a_0] + [acc4 ∧ ¬a_0 ∧ a_1] + [acc2 ∧ a_0]   (exclusive ANDs)
//               top_l  = [a_3 ∧ … ∧ a_8]                              (w ≥ 126: w ∈ {126, 127})
//               geS_l  = [w − sharedWords ≥ 0]: N = Σ_i 2^i (ŵ_i − ŝ_i)/2 + 1, |N| ≤ 128 (step)
//   L+3  MLP  the data memories' read addresses (8 dims per space per lane: w, then `high`):
//               w copied; high_G,l = [hi + mis + top ≥ 1], high_S,l = [hi + mis + top + geS ≥ 1]
//             (step pairs), so datamem's fault (high ∨ w ≥ 126) is bad_l for each space.
//   L+4  GDN  the memory heads read (datamem.h); their out dims hold −u = 1 here (the flip is in
//             this MLP), so every literal on a read bit has sign −1.
//        MLP  fault_l = [isMem ∧ e_l ∧ ¬space ∧ high_G,l] + [isMem ∧ e_l ∧ space ∧ high_S,l];
//             fault = per space Σ_l [isMem ∧ space ∧ (lane l is the lowest faulting lane)], the
//               "lowest" condition expanded into exclusive literal patterns (¬e_k, or e_k ∧ ¬high_k,
//               for every k < l: 1 + 2 + 4 + 8 ANDs per space);
//             load_l,i = [¬space ∧ G_l,i] + [space ∧ S_l,i];
//             memrec value_l,i = [isStore ∧ src1_l,i]
//                              + [isB8 ∧ byte(addr_l) = i/8 ∧ src1_l,(i mod 8)]
//                              + Σ_{k ≠ i/8, space} [isB8 ∧ byte(addr_l) = k ∧ space ∧ M_l,i]
//                              + [isB16 ∧ a_1 = i/16 ∧ src1_l,(i mod 16)]
//                              + Σ_space [isB16 ∧ a_1 ≠ i/16 ∧ space ∧ M_l,i];
//             words w_l and mask bits [writes ∧ e_l] (writes = isStore ∨ isB8 ∨ isB16 ∨ isAtom);
//             tag (emit encoding): [writes ∧ space = sp ∧ e = E] → MG(E) / MS(E), E = 1..15;
//             [writes ∧ e = 0] → NOP.
// Every output field is cancelled first, then −u + 2u·Σ(exclusive ANDs or step pairs): each dim
// ends at exactly ±u (the full layout of docs/circuit.md §3.2). Every AND is a clamped pair
// (assembler.h addAnd, Gλ = 2·mlpGain).
//
// How it joins the pipeline (circuit/pipeline.*, another engineer's): the head, offset and
// sharedWords fields are the front end's fetched words and launch latch (the fetched head word
// has inverted polarity there: a caller flips the literals), exec is the result stage's guardTrue
// ∧ mask (not built as one field yet), src0/src1 are the operand select's ports 0 and 1. The adder
// can be the ALU stage's address adder instead (§4.1 L3–L4): the stage's level 1 and 2 then
// move into S1/S2. `load` goes to the result stage's r_l for ld (and, for an atomic, the regrec
// of the old values); `memrec` goes to the emitter's `outcomeFrom` at the memrec's record
// position; `fault` to the scheduler's FAULT token.
//
// Not built (left for later): the atomics' read-modify-write values (evalAtomic: the memrec's
// value field is 0 for an atomic; tag, mask and words are right) and the lane-serial order
// inside one op when two executing lanes of st.b8/st.b16 hit the same word (each lane's value
// is built from the word as read before the op: a later lane's record loses the earlier lane's
// bytes; interpreter: it keeps them) — both need a cross-lane chain (one pass per lane, §4.1);
// spill ops (ldl/stl: the slot's word sharedWords + s·blockX + tid, no fault).
//
// Errors: Usage for fields of the wrong width, too few layers, a head word whose packed layout
// does not match; the data memories' and gadgets' refusals pass through. A refused spec may leave
// units written: discard the weights.
//
// Failing twin (`MemoryStageTwin::SharedBoundOffByOne`): the shared bound checked as w > words
// instead of w ≥ words — the word sharedWords itself reads as valid.
#pragma once

#include <array>
#include <cstdint>

#include "circuit/datamem.h"
#include "circuit/record_emit.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kMemoryStageLayers = 8;
inline constexpr int kMemoryDataLayers = 5;  // the data memories' layers L..L+4 (datamem.h)
// isMem acc4 acc2 isLoad isStore isB8 isB16 isAtom writes, then the built atomics' kinds:
// isAnd isOr isXor isExch (atom.and / or / xor / exch)
inline constexpr int kMemoryKinds = 13;
inline constexpr int kSameWordPairs = 6;  // lane pairs k < l: (0,1) (0,2) (1,2) (0,3) (1,3) (2,3)

enum class MemoryStageTwin : uint8_t {
  None,                 // the stage
  SharedBoundOffByOne,  // failing twin: shared faults at w > sharedWords (not ≥)
  FirstSameWordLane,    // failing twin: the chain takes the FIRST earlier same-word lane's new
                        // word as a lane's old word, not the nearest (wrong from 3 lanes on)
};

struct MemoryLaneIn {
  Field src0;  // 32: the address register
  Field src1;  // 32: the store value
};

struct MemoryStageSpec {
  TokenLayout tokens;     // planned first from a fresh allocator
  int firstLayer = 0;     // layers firstLayer .. firstLayer + 7
  Field head;             // 32: OP(a), +u = 1
  Field offset;           // 32: OP(off)
  Field sharedWords;      // 7: the program's sharedWords
  Field exec;             // 4: executing lanes
  std::array<MemoryLaneIn, kRecordLanes> lanes;
  ReadHeight read = ReadHeight::Nominal;  // the data memories' read (Exact: 4-row cells at dk 128)
  float mlpGain = 128;    // G of the step pairs and the adder (ANDs use 2G)
  MemoryStageTwin twin = MemoryStageTwin::None;
};

struct MemoryStage {
  DataMemory dm;                            // the data memories (layers L..L+4)
  Field kind;                               // L: kMemoryKinds dims, order of kMemoryKinds
  std::array<Field, kRecordLanes> bus;      // L: adder level 1
  std::array<Field, kRecordLanes> addr;     // L+1: 32 bits
  std::array<Field, kRecordLanes> checks;   // L+2: hi, mis, top, geS
  std::array<std::array<Field, kRecordLanes>, 2> readAddr;  // L+3: [space][lane] 8 dims
  std::array<Field, kRecordLanes> laneFault;  // L+4: 1 dim each
  Field fault;                              // L+4: 1 dim
  std::array<Field, kRecordLanes> load;     // L+4: 32 bits each
  std::array<Field, kSameWordPairs> cmpBus;  // L+2: the Eq compare's level 1 (4 dims per pair)
  std::array<Field, kSameWordPairs> eq;      // L+3: [w_k = w_l] on a_2..a_9 (1 dim per pair)
  std::array<Field, kSameWordPairs> same;    // L+4: s_kl = writes ∧ e_k ∧ e_l ∧ eq_kl
  // old'_l: the word lane l's access sees after the op's earlier lanes (lane-serial), the old
  // value an atomic returns to its dst register. atomOld[0] is load[0] (the same dims: lane 0
  // has no earlier lane); atomOld[l], l ≥ 1, is written in L+4+l.
  std::array<Field, kRecordLanes> atomOld;
  RecordOutcomeFields memrec;               // value[l] in L+4+l; words + mask, tag in L+4
  std::array<int, kMemoryStageLayers> units{};  // the stage's own, per layer (datamem's apart)
  std::array<int, kMemoryStageLayers> heads{};  // datamem's heads per layer (0 after L+4)
  int dims = 0;                             // residual dims the stage allocated (datamem's apart)
  int maxFanIn = 0;
};

// Allocates the stage's fields (and the data memories') from `alloc` and writes their heads and
// units. The caller writes the token embeddings; datamem writes its quiet/heavy trace rows.
Expected<MemoryStage> buildMemoryStage(CircuitWeights& weights, FieldAllocator& alloc,
                                       const MemoryStageSpec& spec);

}  // namespace qgpu::circuit
