// qgpu/circuit/memory_stage.h — the memory stage (docs/circuit.md §4.1 L5, §9 "Built: the memory
// stage"): at a memory op's executing position, per lane the byte address, the fault bit where
// the interpreter faults, the data memories' read at that address (circuit/datamem.h), the loaded
// word as a result the result stage can select, the old word an atomic returns, and a store's or
// atomic's memrec in the record emitter's encoding (circuit/record_emit.h RecordOutcomeFields),
// the lanes of one op serialised 0..3 as the interpreter does.
//
// Inputs (clean ±u sign fields, +u = 1, at the executing position; the stage computes at every
// position, only the consumer's enable makes a position count):
//   head        the op's head word OP(a) (32 bits, trace::packedLayout(PackedWord::OpHead)):
//               opcode (bits 4..10) and space (bit 24: 0 global, 1 shared)
//   offset      the op's offset word OP(off) (32 bits: the ROM's offset slot; a byte offset)
//   sharedWords the program word's sharedWords field (7 bits, PROG bits 16..22: the launch latch)
//   blockX      the launch's blockX (5 bits: the operand select's latch), for the spill slots
//   warp        the executing warp w (2 bits: the front end's EXEC latch), for the spill slots
//   exec        the executing lanes e = m ∧ guard-true (4 bits)
//   per lane    src0_l (32: the address register), src1_l (32: the store value; atom.cas's
//               compare value), src2_l (32: atom.cas's swap value; with the prefix atomics)
// Output semantics, exactly oracle/interpreter.cpp `execMem` (docs/machine.md §4 "Memory"):
//   addr_l  = src0_l + offset (mod 2^32)
//   bytes   = oracle::accessBytes(op) (semantics.h: 4 ld / st / atomics, 2 st.b16, 1 st.b8)
//   words   = 126 (global) or sharedWords (shared: the user part only)
//   bad_l   = addr_l mod bytes ≠ 0 ∨ addr_l / 4 ≥ words      (a lane's address faults)
//   fault_l = isMem ∧ e_l ∧ bad_l;  fault = ⋁_l fault_l       (op-level: no lane acts, FAULT)
//   load_l  = M_space[addr_l / 4]                             (ld's value: the word before the op)
//   s_kl    = writes ∧ e_k ∧ e_l ∧ [w_k = w_l], k < l         (lanes of one writing op on one word;
//             0 for stl, whose lanes' slot words differ)
//   old'_l  = new_k for the nearest k < l with s_kl, else load_l (atomOld_l: what lane l sees,
//             lane-serial; an atomic's dst value)
//   new_l   = src1_l (st, atom.exch); evalSubwordStore(op, old'_l, addr_l, src1_l) (st.b8, st.b16);
//             evalAtomic(op, old'_l, src1_l) (atom.and / or / xor / add / min / max, u and s;
//             atom.inc, atom.dec, atom.cas with src2_l)
//   memrec (stores and atomics): tag MG(e) / MS(e), NOP for e = 0; mask e; word_l = addr_l / 4;
//           value_l = new_l.
//   Specified where the op does not fault (a faulting op writes nothing and has no memrec; the
//   same-word compare looks at a_2..a_9 only, which is the word when no lane faults).
// The spill ops (ldl, stl: isa.def's Local class) use no address: lane l's slot s (the offset word)
// is shared word v_l = sharedWords + s·blockX + 4w + l (docs/machine.md §4), they never fault
// (verify(program, launch) keeps every slot inside shared memory, so v_l ≤ 125 on an executing
// lane), and the lanes' words differ, so no lane sees another's write:
//   ldl: load_l = M_shared[v_l] (onto the ALU's r_l like ld's);
//   stl: memrec MS(e), word_l = v_l, value_l = src0_l (the op's one source: `slot = a`).
//
// Layers (L = firstLayer, 10 layers L..L+9; the data memories' five layers L..L+4 are built
// inside, datamem.h, their read address the stage's; the stage's units follow the data memories'
// in each MLP; L+5..L+9 are MLP only):
//   L    MLP  the adder's level 1 per lane (logic.h buildAdder: src0_l + offset, 10 bus dims per
//             nibble); the op kind decoded from the opcode against isa.def's Mem column and
//             accessBytes (one 7-literal AND per op row: the table stays the one definition):
//               isMem, acc4 (bytes = 4), acc2 (bytes = 2), isLoad (Read), isStore (Write),
//               isB8, isB16 (the sub-word stores), isAtom (ReadWrite), writes (Write ∨ ReadWrite),
//               isAnd, isOr, isXor, isExch, isAdd, isMinU, isMaxU, isMinS, isMaxS, isMinMax,
//               isInc, isCas, isDec, isSpill (Local), isStl, and shared — the space the op
//               reads and writes: [op ∧ space bit] for a Mem row, 1 for a Local row (the head's
//               space bit is not the spill ops'); every later "space" literal is this dim
//   L+1  MLP  the adder's level 2: addr_l (32 bits); the spill slot's products p_ij = [spill
//             opcode ∧ s_i ∧ x_j] of the slot s (the offset word's bits 0..6) and blockX x, for
//             i + j ≤ 6 (2 × 25 ANDs: a valid slot's s·blockX ≤ 125, so every product of weight
//             ≥ 128 is 0; at any other op all are 0, so C below stays ≤ 127 + 125)
//   L+2  MLP  the slot's base C = sharedWords + Σ 2^{i+j} p_ij in bits: bit k = Σ_{m=1..⌊127/2^k⌋}
//             (−1)^{m+1} [C ≥ m·2^k] (247 step pairs; C ≥ 128 only where no lane executes a
//             spill op, and the bits stay clean there);
//             per lane (a_i = addr_l's bit i, w = a_2..a_8 the word index below 128):
//               hi_l   = [Σ_{i=9..31} a_i ≥ 1]                       (one step pair)
//               mis_l  = [acc4 ∧ a_0] + [acc4 ∧ ¬a_0 ∧ a_1] + [acc2 ∧ a_0]   (exclusive ANDs)
//               top_l  = [a_3 ∧ … ∧ a_8]                              (w ≥ 126: w ∈ {126, 127})
//               geS_l  = [w − sharedWords ≥ 0]: N = Σ_i 2^i (ŵ_i − ŝ_i)/2 + 1, |N| ≤ 128 (step)
//   L+3  MLP  the data memories' read addresses (8 dims per space per lane: w, then `high`):
//               global: w copied; shared: [¬isSpill ∧ w] + the slot word v_l = C + q, q = 4w + l,
//             under isSpill: bit k = C_k ⊕ q_k ⊕ c_k, the carry c_k = [T_k ≥ 2^k], T_k = C mod
//             2^k + q mod 2^k — with S = K·(C_k + q_k) + T_k (K = max T_k + 1), [S ≥ 2^k] − [S ≥
//             K + 2^k] + [S ≥ 2K + 2^k] (the last left out where q_k is 0: S < 2K), each step
//             pair held off by −256·¬isSpill (S ≤ 236);
//             high_G,l = [hi + mis + top ≥ 1], high_S,l = [hi + mis + top + geS − 4·isSpill ≥ 1]
//             (step pairs), so datamem's fault (high ∨ w ≥ 126) is bad_l for each space and never
//             a spill op's.
//   L+4  GDN  the memory heads read (datamem.h); their out dims hold −u = 1 here (the flip is in
//             this MLP), so every literal on a read bit has sign −1.
//        MLP  fault_l = [isMem ∧ e_l ∧ ¬space ∧ high_G,l] + [isMem ∧ e_l ∧ space ∧ high_S,l];
//             fault = per space Σ_l [isMem ∧ space ∧ (lane l is the lowest faulting lane)], the
//               "lowest" condition expanded into exclusive literal patterns (¬e_k, or e_k ∧
//               ¬high_k, for every k < l: 1 + 2 + 4 + 8 ANDs per space);
//             load_l,i = [¬space ∧ G_l,i] + [space ∧ S_l,i];
//             lane 0's memrec value (the chain below, its sources the read per space);
//             s_kl; the masked operands m_kl = e_k ∧ e_l ∧ eq_kl ? b_k : the kind's identity
//             (0 for add and max.u; min.u 0xffffffff, min.s 0x7fffffff, max.s 0x80000000:
//             3 exclusive patterns for ¬(e_k ∧ e_l ∧ eq_kl) per identity bit);
//             words w_l (the shared read address's word: v_l for stl) and mask bits [writes ∧
//             e_l] (writes = isStore ∨ isB8 ∨ isB16 ∨ isAtom ∨ isStl);
//             tag (emit encoding): [writes ∧ space = sp ∧ e = E] → MG(E) / MS(E), E = 1..15;
//             [writes ∧ e = 0] → NOP.
//   The same-word literals: L+2 / L+3 logic.h's Eq compare of a_2..a_9 per pair (k, l) (level 1,
//   level 2), L+4 s_kl = [writes ∧ ¬isSpill ∧ e_k ∧ e_l ∧ eq_kl] (one AND each).
//   The chain (bitwise kinds and sub-word stores; bit i of new is a function of old'_i, b_i):
//   lane 0 in L+4 (old'_0 = M_0, the read of its space), lane l = 1..3 in L+4+l, its sources
//   none (∧_{k<l} ¬s_kl → load_l) and k (s_kl ∧ ∧_{k<k'<l} ¬s_k'l → value_k, the nearest), the
//   source literals folded into the kind's ANDs:
//             st, exch: b_i;  stl: a_i (src0);  and: b_i ∧ o;  or: b_i + ¬b_i ∧ o;
//             xor: b_i ∧ ¬o + ¬b_i ∧ o;  st.b8 / st.b16: the addressed byte / half from b, the
//             others o;  atomOld: o
//   (o = the source's bit, ANDed with its source literals); value_l and atomOld_l in L+4+l.
//   atom.add, a prefix sum (no serial dependence; lanes on one word share M): new_l = M_l + b_l +
//   Σ_{k<l} m_kl, m_kl = b_k where isAdd ∧ e_k ∧ e_l ∧ eq_kl (L+4, ANDs); L+5: per column i the
//   count T_i of the l + 2 operand bits in binary rows (step pairs [T_i ≥ j]: c0 = Σ_j (−1)^{j+1}
//   [T ≥ j], c1 = [T ≥ 2] − [T ≥ 4], c2 = [T ≥ 4], row r's bit i + r); L+6 (lanes 2, 3: 3 rows) a
//   3:2 step (sum [T≥1] − [T≥2] + [T≥3], carry [T ≥ 2] to bit i + 1); then logic.h's two-level
//   adder (lane 0 L+5/L+6, lane 1 L+6/L+7, lanes 2, 3 L+7/L+8; its bus a field of its own, so
//   that the address adders' dies after L+1). L+9: value_l = [¬isAdd ∧ value_l] + [isAdd ∧
//   sum_l] and atomOld_l (l ≥ 1) = [¬isAdd ∧ atomOld_l] + the chain's sources over the sums (the
//   nearest earlier lane's sum).
//   atom.min / max, all pairs (no serial dependence: the minimum of M and the word's b's so far):
//   operands X = (M_l, m_0l..m_{l−1}l, b_l), n = l + 2; c_pq = [X_p < X_q] for p < q: lt.u by
//   logic.h's compare (L+5 / L+6, 20 compares), lt.s = lt.u ⊕ [the signs of X_p and X_q differ]
//   (L+7: words of different signs order the other way round as two's complement); L+8:
//   min = X_j with ∀p<j ¬c_pj ∧ ∀q>j c_jq (the last index at the minimum), max = X_j with
//   ∀p<j c_pj ∧ ∀q>j ¬c_jq (the first at the maximum): exactly one j, exclusive ANDs; L+9 selects
//   them by isMinMax like atom.add's.
//   atom.inc (new = old ≥ b ? 0 : old + 1), by paths (no serial dependence): along the lanes
//   before l on its word (a pattern of the s_kl) the word is M + i after i lanes until a lane k
//   wraps it (W_k(i) = [M_k + i ≥ b_k]; no overflow on a reachable path: M + i − 1 = 2^32 − 1
//   would have wrapped), then small: t = 0 after a wrap, then t + 1 or 0 by Z_k(t) = [b_k ≤ t]
//   (t ≤ 2). Each path is one exclusive AND (fan-in ≤ 1 + 3 + 3 + 2) that writes old'_l
//   (M_l + p or t) and new_l (0 on lane l's own wrap, else M_l + p + 1 or t + 1). L+5: Z_l(t)
//   = [4·Σ_{i≥2} b_i + 2b_1 + b_0 ≤ t] (one step pair each, t < l); L+6: M_l + q, q = 1..l + 1,
//   bit i = [V ≥ θ_i] − [V ≥ K + θ_i] with V = K·(M_i ⊕ q_i) + T_i, T_i the low bits plus q
//   (weight 4 for each bit 3..i−1, so that one zero among them keeps T_i below θ_i), K = max T + 1
//   (|V − θ| ≤ 244); L+7 / L+8: [M_l + q < b_l] (logic.h's lt.u, q = 0..l); L+9: the paths,
//   selected by isInc like atom.add's (3^l paths for lane l: 960 ANDs).
//   atom.cas (new = old = b ? c : old), by states: along the lanes before l on its word the word
//   is M until a lane k swaps c_k in, then c_k until a later lane swaps. L+5 / L+6: [M_j = b_j]
//   per lane and [c_k = b_j] per pair k < j (logic.h's Eq, 10 compares); L+7: every path of a
//   pattern (2^p for p lanes on the word) is one exclusive AND that writes lane l's one-hot state
//   (M or c_k: the word old'_l) and, with lane l's own test, its swap bit; L+9: old'_l by the
//   state, new_l = c_l on a swap, else old'_l (32 bits per state, not per path: 736 ANDs).
//   atom.dec (new = old = 0 ∨ old > b ? b : old − 1), by states: along the lanes before l on its
//   word the word is M − n after n lanes until a lane k wraps it to b_k, then b_k − r after r
//   more lanes. Lane j wraps M − n iff [M = n] ∨ [b_j + n < M] and b_k − r iff [b_k = r] ∨
//   [b_j + r < b_k] (b_j + n saturated at 2^32 − 1: one layer, addSmallConstant's sum plus the
//   overflow on every bit not set); each test one compare with its zero test folded into level 2
//   (exclusive: at a zero word the compare is false; the n = 0 / r = 0 tests are le.u on min /
//   max's bus of (M_l, b_l) / (m_kl, b_l), the zero test on the same operand). Nothing before L+3
//   (the ALU's fields die there): L+3 / L+4 the saturated sums; L+4 / L+5 the zero tests and the
//   compares' level 1, L+5 / L+6 level 2; L+6 / L+7 the words M_l − q (q ≤ l) and b_k − r; L+7
//   the one-hot state per lane (10 for lane 3) and its wrap bit, by atom.cas's paths; L+8 old'_l
//   by the state (32 ANDs per state); L+9 new_l = b_l on a wrap, else old'_l − 1 in one layer
//   (bit i = m_i ⊕ [m_0..m_{i−1} all 0], both steps forced on where it wraps or the op is no dec).
// Every output field is cancelled first, then −u + 2u·Σ(exclusive ANDs or step pairs): each dim
// ends at exactly ±u (the full layout of docs/circuit.md §3.2). Every AND is a clamped pair
// (assembler.h addAnd, Gλ = 2·mlpGain).
//
// How it joins the pipeline (circuit/pipeline.h, ExecuteSpec::memory): without the prefix
// atomics (8 layers), the head word in the ROM's polarity (headInverted), the offset word flipped
// by the pipeline, sharedWords the operand select's third launch latch, exec computed by the
// pipeline at L, src0 / src1 / src2 the operand select's ports 0..2, the load onto the ALU's r_l
// (loadOnto), the fault into the control stage's supplied fault (faultInto), heads and units after
// the other stages' (firstHead, firstUnit); `memrec` goes to the emitter through the pipeline's
// outcome select; `atomOld` goes to the regrec of an atomic's old values (not `load`: a later
// lane on a word sees the earlier lanes' writes).
//
// Errors: Usage for fields of the wrong width, too few layers, a head word whose packed layout
// does not match; the data memories' and gadgets' refusals pass through. A refused spec may leave
// units written: discard the weights.
//
// Failing twins (`MemoryStageTwin`): SharedBoundOffByOne, the shared bound checked as w > words
// instead of w ≥ words — the word sharedWords itself reads as valid; FirstSameWordLane, the chain's
// old'_l taken from the first earlier same-word lane instead of the nearest; IncWrapsAtTheOldWord,
// atom.inc's wrap test after i earlier lanes taken as M ≥ b instead of M + i ≥ b;
// CasComparesTheOldWord, atom.cas's test after an earlier lane swapped taken against M;
// DecIgnoresLanesSinceTheWrap, atom.dec's test r lanes after a wrap taken against b_k, not b_k − r;
// SpillWithoutTheWarp, a spill slot's word taken as C + l, the warp's 4w left out;
// SignedMinMaxByLtU, min.s / max.s selected by lt.u instead of lt.s.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "circuit/datamem.h"
#include "circuit/record_emit.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kMemoryStageLayers = 10;
inline constexpr int kMemoryDataLayers = 5;  // the data memories' layers L..L+4 (datamem.h)
// isMem acc4 acc2 isLoad isStore isB8 isB16 isAtom writes, then the built atomics' kinds:
// isAnd isOr isXor isExch isAdd isMinU isMaxU isMinS isMaxS isMinMax isInc isCas isDec (the
// built atomics), isMinMaxDec (min / max or dec: the guard of the compare bus both read),
// isAddMinMaxDec (add, min / max or dec: the guard of the pairs' masked operands addMask, which
// those alone read), isSpill isStl (the spill ops), shared (the space the op reads and writes)
inline constexpr int kMemoryKinds = 27;
inline constexpr int kMemoryKindWrites = 8;  // MemoryStage::kind's dim of `writes`
inline constexpr int kSameWordPairs = 6;  // lane pairs k < l: (0,1) (0,2) (1,2) (0,3) (1,3) (2,3)

enum class MemoryStageTwin : uint8_t {
  None,                   // the stage
  SharedBoundOffByOne,    // failing twin: shared faults at w > sharedWords (not ≥)
  FirstSameWordLane,      // failing twin: the chain takes the FIRST earlier same-word lane's new
                          // word as a lane's old word, not the nearest (wrong from 3 lanes on)
  IncWrapsAtTheOldWord,   // failing twin: atom.inc's wrap test after i earlier lanes on the word
                          // compares M ≥ b, not M + i ≥ b (wrong where M < b ≤ M + i)
  CasComparesTheOldWord,  // failing twin: atom.cas's test after an earlier lane swapped compares
                          // M = b, not the swapped-in value = b
  DecIgnoresLanesSinceTheWrap,  // failing twin: atom.dec's test r lanes after a wrap to b_k
                                // compares with b_k, not b_k − r
  SpillWithoutTheWarp,          // failing twin: a spill slot's word leaves out the warp (C + l, not
                                // C + 4w + l): warps past the first read and write warp 0's slots
  SignedMinMaxByLtU,            // failing twin: atom.min.s / max.s select by lt.u, not lt.s (wrong
                                // where the lanes' words differ in sign)
};

struct MemoryLaneIn {
  Field src0;  // 32: the address register
  Field src1;  // 32: the store value (atom.cas: the compare value)
  Field src2;  // 32: atom.cas's swap value (needed with the prefix atomics; 0 dims without)
};

struct MemoryStageSpec {
  TokenLayout tokens;     // planned first from a fresh allocator
  int firstLayer = 0;     // layers firstLayer .. firstLayer + 9
  Field head;             // 32: OP(a), +u = 1
  Field offset;           // 32: OP(off)
  Field sharedWords;      // 7: the program's sharedWords
  Field blockX;           // 5: the launch's blockX (the spill slots' stride)
  Field warp;             // 2: the executing warp (a spill slot's thread is 4·warp + lane)
  Field exec;             // 4: executing lanes
  std::array<MemoryLaneIn, kRecordLanes> lanes;
  ReadHeight read = ReadHeight::NormRail;  // the data memories' read (memory.h; Exact: 4-row
                                           // cells at dk 128; Nominal: the one-row twin)
  float mlpGain = 128;    // G of the step pairs and the adder (ANDs use 2G)
  MemoryStageTwin twin = MemoryStageTwin::None;
  // Hosting (circuit/pipeline.h): the head word in the ROM's polarity (−u = 1: every head literal's
  // sign flips); where the stage's heads (the data memories', L..L+4) and units start per layer.
  bool headInverted = false;
  std::array<int, kMemoryDataLayers> firstHead{};
  std::array<int, kMemoryStageLayers> firstUnit{};
  // false: atom.add, min, max, inc, dec and cas are not built (no prefix sum, no compares, no L+9
  // select): the stage is kMemoryChainLayers layers, their memrec values are 0.
  bool prefixAtomics = true;
  // Optional (0 dims: none): the stage also adds 2u·[isLoad ∧ bit set] onto loadOnto[l] at L+4,
  // without cancelling it, so a field that holds −u (0) at every load position ends there as the
  // loaded word (the ALU's r_l: the ALU writes 0 for a memory opcode).
  std::array<Field, kRecordLanes> loadOnto{};
  // Optional (0 dims: the stage takes its own): the 1-dim field the fault bit is written into.
  Field faultInto;
  // Optional (0 dims: none): a 1-dim literal, +u at the stage's ops alone (memory and spill ops),
  // written before L's MLP. With it the address path's fields — the adders' buses and sums, the
  // checks, the read addresses — are taken with kKindMemoryStage (weights.h Field::kinds) and
  // their writers guarded by it (units.h UnitGuard): at another stage's op they keep what their
  // dims held, as arbitrary as the address src0 + offset of a non-memory op was, and every use
  // of them is ANDed with a kind (the faults with isMem, the loads with isLoad, the memrec with
  // writes), so the pipeline may put another stage's fields of other kinds on them.
  Field guard;
};

// The layers a spec's stage spans: 10, or kMemoryChainLayers without the prefix atomics.
inline constexpr int kMemoryChainLayers = 8;
inline int memoryStageLayers(const MemoryStageSpec& s) {
  return s.prefixAtomics ? kMemoryStageLayers : kMemoryChainLayers;
}

struct MemoryStage {
  DataMemory dm;                            // the data memories (layers L..L+4)
  Field kind;                               // L: kMemoryKinds dims, order of kMemoryKinds
  std::array<Field, kRecordLanes> bus;      // L: adder level 1
  Field spillProducts;                      // L+1: p_ij = [s_i ∧ blockX_j], i + j ≤ 6 (25 dims)
  Field spillBase;                          // L+2: C = sharedWords + s·blockX (7 bits)
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
  // atom.add (the prefix sum): addMask per pair (L+4: b_k where s_kl, under isAddMinMaxDec: its
  // kinds are add, min / max and dec, whose units alone read it), count rows per lane
  // (L+5: 2 rows for lane 1, 3 for lanes 2, 3; none for lane 0), the reduced pair (L+6, lanes 2,
  // 3), the sum M_l + b_l + Σ_k m_kl (addNew: L+6, L+7, L+8, L+8 for lanes 0..3) through an
  // adder whose level 1 writes addBus.
  std::array<Field, kSameWordPairs> addMask;
  std::array<Field, kRecordLanes> addRows, addPair, addBus, addNew;
  // atom.min / max: per lane and operand pair (p < q), the lt.u compare's (bus, out) (L+5 / L+6)
  // and lt.s (mmLtS: one dim per pair, L+7: lt.u ⊕ the pair's sign bits differ); the selected word
  // (L+8). addMask doubles as their masked operands (an absent lane's operand is the kind's
  // identity).
  std::array<std::vector<std::pair<Field, Field>>, kRecordLanes> mmCompare;
  std::array<Field, kRecordLanes> mmLtS;
  std::array<Field, kRecordLanes> mmNew;
  // atom.inc: per lane the words M_l + q for q = 1..l + 1 (incPlus[l][q − 1], L+6), the compares
  // (bus, [M_l + q < b_l]) for q = 0..l (incCompare[l][q], L+7 / L+8) and the small-word wraps
  // [b_l ≤ t] for t = 0..l − 1 (incSmall[l], l dims, L+5).
  std::array<std::vector<Field>, kRecordLanes> incPlus;
  std::array<std::vector<std::pair<Field, Field>>, kRecordLanes> incCompare;
  std::array<Field, kRecordLanes> incSmall;
  // atom.cas: the compares (bus, [M_j = b_j]) per lane (casSelf, L+5 / L+6) and (bus, [c_k = b_j])
  // per pair k < j (casPair, pairIndex order); per lane the one-hot state — the word lane l sees is
  // M_l (dim 0) or c_k (dim k + 1, the last earlier lane on its word that swapped) — and whether
  // lane l swaps (casState: l + 2 dims, the last one the swap; L+7).
  std::array<std::pair<Field, Field>, kRecordLanes> casSelf;
  std::array<std::pair<Field, Field>, kSameWordPairs> casPair;
  std::array<Field, kRecordLanes> casState;
  // atom.dec: per lane l ≥ 1 the words min(b_l + n, 2^32 − 1), n = 1..l (decSat: L+3 for lanes 2,
  // 3, L+4 for lane 1); [b_k = r], r = 1..2 − k (decZeroB, lanes 0, 1: L+4); [m_kl = 0] per pair
  // (decZeroMask, L+5); [M_l = n], n = 0..l (decZeroM, L+5); the wrap tests — decWrapM[l][n]:
  // [M_l = n] ∨ [b_l + n < M_l] (the word M − n after n lanes), decWrapB[pair (k, l)][r]: [b_k = r]
  // ∨ [b_l + r < b_k] (the word b_k − r, r lanes after lane k wrapped it) — as (bus, out): n ≥ 1
  // and r ≥ 1 compares of their own (level 1 at L+4 or L+5), n = 0 and r = 0 an output only, ¬out
  // at L+6 (le.u on min / max's bus); the words b_k − r, r = 1..2 − k (decBMinus, lanes 0, 1: L+7)
  // and M_l − q, q = 1..l (decMinus, L+6 / L+7); per lane the one-hot state (the word lane l sees:
  // M − n, n = 0..l, then b_k − r per k < l, r = 0..l − k − 1) and whether lane l wraps (decState,
  // the last dim; L+7); the word lane l ≥ 1 sees (decOld, L+8).
  std::array<Field, kRecordLanes> decSat, decZeroB, decZeroM, decBMinus, decMinus, decState, decOld;
  std::array<Field, kSameWordPairs> decZeroMask;
  std::array<std::vector<std::pair<Field, Field>>, kRecordLanes> decWrapM;
  std::array<std::vector<std::pair<Field, Field>>, kSameWordPairs> decWrapB;
  RecordOutcomeFields memrec;  // value[l]: the chain's in L+4+l, final in L+9 (add selected);
                               // words + mask, tag in L+4
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
