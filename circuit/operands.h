// qgpu/circuit/operands.h — the operand select (docs/circuit.md §4.1 L2, §9 "Built: the operand
// select"): on top of the front end (circuit/frontend.h, built with payloadBanks), the operand
// word of source k in lane l as the interpreter reads it (oracle/interpreter.cpp `src`):
//   Reg      the register file's port k in lane l (r0 reads 0)
//   Imm      the ROM's payload word i_k (an immediate 0 has no prompt word: the bank reads 0)
//   Special  tid.x = 4w + l, laneid = l, warpid = w, ntid.x = blockX, nctaid.x = gridX (the PROG
//            word's launch fields, latched), ctaid.x = the CTA tokens since RUN (docs/trace.md:
//            "ctaid = number of CTA tokens so far")
//   None     0
// in the register file's operand fields themselves (word[k][l] = fe.rf.operand[k][l]): after
// layer L+4's MLP they hold the operand word, ±u, in the polarity the ALU stage reads (+u = 1;
// AluLane a, b, c = word[0..2][l]).
//
// The maths (L = the front end's layer0; heads after the front end's own in each layer):
//   L    head fe.heads[0]: the CTA counter (counter.h: events = the CTA family bit, reset = RUN,
//        the register file's third quiet dim). Before RUN it reads "infinite" (ctaid 15: the
//        prompt has no op positions).
//   L+1  head fe.heads[1]: the PROG-tag latch (enable: the front end's prompt-tag detector; value:
//        the PROG family bit), so it holds "the last prompt tag was PROG". MLP: progEnable =
//        −u + 2u·[T ∧ PROG-tag] (the PROG value's last token).
//   L+2  heads fe.heads[2], +1: the launch latches (enable progEnable; values the assembled value's
//        gridX and blockX bits at their packedLayout(Program) offsets, 5 + 3 ballast each).
//   L+4  heads fe.heads[4] .. +14: the thresholds [c ≥ 1..15] on the CTA counter
//        (kMaxGridBlocks − 1 = 15 CTA tokens at most). MLP (after the register file's polarity
//        flip, in the same layer): the port k of lane l holds after the flip exactly −u on every
//        bit unless kind(k) = Reg (its read key is r0 then, frontend.h), so the select only adds
//        +2u per set bit of the other kinds, each an exclusive AND on the fetched sources word
//        (inverted polarity: a literal "bit set" is sign −1):
//          Imm:     kind(k) = Imm ∧ i_k bit i set                  → bit i of all 4 lanes
//          tid.x:   kind(k) = Sp ∧ index(k) = TidX                 → bits of l in lane l (bits 0,1)
//                   … ∧ w bit j                                    → bit 2 + j, all lanes
//          laneid:  kind(k) = Sp ∧ index(k) = LaneId               → bits of l in lane l
//          warpid:  … ∧ w bit j                                    → bit j, all lanes
//          ntid.x:  … ∧ blockX bit j; nctaid.x: … ∧ gridX bit j    → bit j, all lanes
//          ctaid.x: … ∧ [c ≥ v] ∧ ¬[c ≥ v + 1]   (v = 1..15)       → the bits of v, all lanes
//        (kind 2 literals, index 4, ≤ 2 more: ≤ 8 literals; at most one AND per output dim holds:
//        the kinds and special indices are exclusive, and so are the thermometer's windows).
// Per source 65 ANDs (32 + 2 + 2 + 2 + 2 + 5 + 5 + 15), 130 units; 390 for the three sources.
//
// Budget (added to the front end's {4, 10, 26, ·, 20}: L+4 holds 35): heads L +1, L+1 +1, L+2 +2,
// L+4 +15; the payload banks of
// the front end 4·512/dk more at L+3 (32 at dk 64, 16 at 128: L+3 holds 49 / 25 heads); units
// L+1 +4 (and the front end's 4 payload slot enables, +16), L+4 +390; residual dims 8 + 1 + 16 + 15 = 40 (the operand words reuse the register
// file's 384).
//
// The predicate sources psrc0/psrc1 (the ALU's p, q) are the front end's predicate ports
// (fe.predPort[1], [2], frontend.h), not this stage's. Not handled: the offset word is fetched
// (fe.offsetWord) but not yet added to an address.
#pragma once

#include <array>
#include <vector>

#include "circuit/frontend.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// Failing-twin knobs: each breaks one rule and must give wrong operand words.
enum class OperandsTwin : uint8_t {
  None,             // the stage
  ImmFromNextSlot,  // source k's immediate read from payload slot i_(k+1 mod 3)
  TidWithoutWarp,   // tid.x = l (the warp's 4w left out)
};

struct OperandsSpec {
  TokenLayout tokens;    // the front end's
  int layer0 = 0;        // the front end's L
  float headGain = 128;  // as the front end's
  float mlpGain = 128;
  OperandsTwin twin = OperandsTwin::None;
  // A third launch latch at L+2 (head fe.heads[2] + 2): the PROG word's sharedWords (the memory
  // stage's bound; circuit/pipeline.h with memory ops), into `sharedWords` (8 dims after the rest).
  bool sharedWordsLatch = false;
};

struct Operands {
  Field progTag;     // L+1: [isPROG, ballast ×7] of the last prompt tag
  Field progEnable;  // L+1 MLP: 1 dim
  Field launch;      // L+2: [gridX (5), ballast ×3, blockX (5), ballast ×3]
  Field gridX, blockX;
  Field sharedWords;  // L+2, with sharedWordsLatch: [sharedWords (7), ballast], +u = 1; else 0 dims
  Field ctaAtLeast;  // L+4: dim N−1 = [c ≥ N], N = 1..15, c = CTA tokens since RUN
  std::vector<std::array<Field, 4>> word;  // [source][lane]: 32 dims (= fe.rf.operand)
  int heads[5] = {};  // this stage's heads per layer L..L+4 (after the front end's)
  int units[5] = {};  // this stage's units per layer L..L+4
};

// Builds the stage into `weights` on top of `fe` (built with payloadBanks into the same weights;
// fields from `alloc`). Usage diag when the front end has no payload banks, or the config lacks
// the heads; the gadgets' refusals pass through.
Expected<Operands> buildOperands(CircuitWeights& weights, FieldAllocator& alloc, const FrontEnd& fe,
                                 const OperandsSpec& spec);

// Value heads per layer L..L+4 of the front end (with payload banks) and this stage together.
std::vector<int> operandStageHeads(int64_t keyHeadDim);

}  // namespace qgpu::circuit
